#!/bin/bash
# usage: ab2.sh NAME OLD_DIR NEW_DIR ARGS... ; alternates old and new, `fogline bench mqtt ARGS`
name=$1; old=$2; new=$3; shift 3
for i in 1 2 3 4; do
  for v in A B; do
    bin=$old; [ $v = B ] && bin=$new
    $bin/fogline bench mqtt "$@" --no-progress --out /tmp/exp/$name-$v-$i > /tmp/exp/$name-$v-$i.log 2>&1
  done
done
echo done > /tmp/exp/$name.done
