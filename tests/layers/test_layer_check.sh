#!/usr/bin/env bash
# The layering check itself (check_engine_layers.sh, which the build runs): it passes on the
# engine as it is and refuses, naming the include, copies of it with one forbidden include.
set -euo pipefail
check="$(dirname "$0")/check_engine_layers.sh"
engine="${1:?usage: test_layer_check.sh ENGINE_DIR}"
bash "$check" "$engine" >/dev/null
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$engine" "$work/engine"

# expect_refused FILE INCLUDE MESSAGE: FILE (under engine/) with INCLUDE as its second line fails
# the check, which prints MESSAGE; the file is then restored.
expect_refused() {
  cp "$work/engine/$1" "$work/original"
  sed -i "1a $2" "$work/engine/$1"
  local out
  out="$(bash "$check" "$work/engine" 2>&1)" && { echo "FAIL: not refused: $2 in $1"; exit 1; }
  mv "$work/original" "$work/engine/$1"
  if ! grep -qF "$1:2: $3" <<<"$out"; then
    echo "FAIL: $2 in $1 refused without '$1:2: $3':"
    echo "$out"
    exit 1
  fi
  echo "refused: $2 in $1"
}

expect_refused backend/backend.cpp '#include "engine/runtime/session.h"' 'engine/backend includes engine/runtime, which comes after it'
expect_refused core/error.cpp '#include "engine/quant/scheme.h"' 'engine/core includes engine/quant, which comes after it'
expect_refused runtime/session.cpp '#include "engine/backend/cpu/cpu_backend.h"' "the runtime uses backends through engine/backend/backend.h"
expect_refused model/model.cpp '#include <QString>' 'the engine includes QString>'
expect_refused formats/quant.cpp '#include "gpu/vk_context.h"' 'the engine includes gpu/'
