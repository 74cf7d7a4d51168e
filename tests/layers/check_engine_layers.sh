#!/usr/bin/env bash
# The engine's layering, checked on its includes: a module of engine/ includes only modules
# before it in LAYERS (and itself), and nothing of the app, the UI, the GPU backend, Qt or
# Vulkan; the runtime sees backends through their interface only. Prints every violation and
# fails when there is one.
set -euo pipefail
engine="${1:?usage: check_engine_layers.sh ENGINE_DIR}"

LAYERS=(core formats gguf tokenizer model kv synth convert backend runtime chat quant plan bench eval probes
        instruments speculative remote serve)

position() {
  local i
  for i in "${!LAYERS[@]}"; do
    [ "${LAYERS[$i]}" = "$1" ] && { echo "$i"; return; }
  done
  echo -1
}

violations=0
for dir in "$engine"/*/; do
  module="$(basename "$dir")"
  own="$(position "$module")"
  if [ "$own" -lt 0 ]; then
    echo "engine/$module: not in the layer list of $0"
    violations=$((violations + 1))
    continue
  fi
  while IFS= read -r hit; do
    file="${hit%%:*}"
    rest="${hit#*:}"
    line="${rest%%:*}"
    include="${rest#*:}"
    if [[ "$include" =~ \#include[[:space:]]*\"engine/([a-z_]+)/ ]]; then
      target="${BASH_REMATCH[1]}"
      at="$(position "$target")"
      if [ "$at" -lt 0 ] || [ "$at" -gt "$own" ]; then
        echo "${file#"$engine"/}:$line: engine/$module includes engine/$target, which comes after it"
        violations=$((violations + 1))
      elif [ "$module" = runtime ] && [[ "$include" == *'"engine/backend/cpu/'* ]]; then
        echo "${file#"$engine"/}:$line: the runtime uses backends through engine/backend/backend.h, not the CPU backend's own headers"
        violations=$((violations + 1))
      fi
    elif [[ "$include" =~ \#include[[:space:]]*[\<\"](gpu/|ui/|app/|Q[A-Za-z]*[\>.]|vulkan) ]]; then
      echo "${file#"$engine"/}:$line: the engine includes ${BASH_REMATCH[1]} (engine/ is Qt-, Vulkan- and app-free)"
      violations=$((violations + 1))
    fi
  done < <(grep -rn --include='*.h' --include='*.cpp' '^[[:space:]]*#include' "$dir" || true)
done
if [ "$violations" -gt 0 ]; then
  echo "$violations include(s) break the engine's layering"
  exit 1
fi
echo "engine layering holds: ${LAYERS[*]}"
