#!/usr/bin/env bash
# deterministic.sh KILN MODEL — compiling the same model twice gives
# byte-identical .c and .h files, and the .c builds with -std=c99 -Wall
# -Wextra -Werror -pedantic.
set -eu
kiln=$1 model=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/a" "$work/b"
"$kiln" compile "$model" -o "$work/a/net.c"
"$kiln" compile "$model" -o "$work/b/net.c"
cmp "$work/a/net.c" "$work/b/net.c"
cmp "$work/a/net.h" "$work/b/net.h"
cc -std=c99 -Wall -Wextra -Werror -pedantic -O1 -c "$work/a/net.c" -o "$work/a/net.o"
echo "deterministic: $(wc -c < "$work/a/net.c") bytes of C, identical across runs, builds cleanly"
