#!/bin/bash
# alternates multi-thread (M) and current-thread (C) load runtimes
for i in 1 2 3; do
  for v in M C; do
    if [ $v = C ]; then export FOGLINE_BENCH_RT_CURRENT=1; else unset FOGLINE_BENCH_RT_CURRENT; fi
    /tmp/fbinC/fogline bench core "$@" --no-progress --out /tmp/exp/rt-$v-$i > /tmp/exp/rt-$v-$i.log 2>&1
  done
done
echo done > /tmp/exp/rt.done
