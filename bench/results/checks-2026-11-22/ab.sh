#!/bin/bash
# usage: ab.sh NAME ARGS... ; alternates old (/tmp/fbin) and new (/tmp/fbinB) binaries
name=$1; shift
for i in 1 2 3; do
  for v in A B; do
    bin=/tmp/fbin; [ $v = B ] && bin=/tmp/fbinB
    $bin/fogline bench core "$@" --no-progress --out /tmp/exp/$name-$v-$i > /tmp/exp/$name-$v-$i.log 2>&1
  done
done
echo done > /tmp/exp/$name.done
