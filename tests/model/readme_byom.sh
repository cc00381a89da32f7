#!/usr/bin/env bash
# docs/models.md's "Bring your own PyTorch model", followed as written: its Python block
# run with Debian's torch from a scratch directory (not the checkout), then its two
# commands on the model it exported. A documented step that stops working fails CI.
#   tests/model/readme_byom.sh SOURCE_DIR VKFORMER_BINARY
set -euo pipefail
src=$(realpath "$1") vkformer=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
readme=$src/docs/models.md
# The fenced python block of that section, and the sh block after it.
section=$(awk '/^## Bring your own PyTorch model/{on=1; next} /^## /{on=0} on' "$readme")
awk '/^```python/{on=1; next} /^```/{if(on) exit} on' <<<"$section" | sed "s|/path/to/vkformer|$src|" >"$work/my_model.py"
awk '/^```sh/{on=1; next} /^```/{if(on) exit} on' <<<"$section" >"$work/run.sh"
grep -q "export(model" "$work/my_model.py" || { echo "FAIL: no python block found in the README section"; exit 1; }
[ "$(wc -l <"$work/run.sh")" -ge 2 ] || { echo "FAIL: no commands found in the README section"; exit 1; }
cd "$work"
/usr/bin/python3 my_model.py
for f in config.json model.safetensors vocab.json; do
  [ -f "my-model/$f" ] || { echo "FAIL: the export wrote no my-model/$f"; exit 1; }
done
# The commands as written, with this build's binary for build/vkformer.
sed "s|build/vkformer|$vkformer|; s|#.*||" run.sh >run_here.sh
out=$(bash -euo pipefail run_here.sh 2>err.txt) || { cat err.txt; echo "FAIL: the README's commands failed"; exit 1; }
echo "$out"
grep -Eq '^[0-9]+(,[0-9]+)*$' <<<"$out" || { echo "FAIL: generate printed no ids"; exit 1; }
grep -q '^12/3 -> ' <<<"$out" || { echo "FAIL: translate printed no answer"; exit 1; }
echo "the README's bring-your-own-model steps run as written"
