#!/bin/bash
# usage: ab3.sh NAME OLD_DIR NEW_DIR SUBCMD ARGS... ; alternates old and new, 4 pairs
name=$1; old=$2; new=$3; sub=$4; shift 4
for i in 1 2 3 4; do
  for v in A B; do
    bin=$old; [ $v = B ] && bin=$new
    $bin/fogline bench $sub "$@" --no-progress --out /tmp/exp/$name-$v-$i > /tmp/exp/$name-$v-$i.log 2>&1
  done
done
echo done > /tmp/exp/$name.done
