// inferscope-cli: the engine's command-line front end.
#include "app/cli/run_cli.h"

int main(int argc, char** argv) { return inferscope::cli::run_cli(argc, argv); }
