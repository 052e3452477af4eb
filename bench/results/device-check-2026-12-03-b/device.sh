#!/bin/bash
# The kernel branch's one device call (2026-12-03): the planner split's
# plans and SASS against main's, then bench/gpu/device_check.sh on the
# branch's binaries and tree, then test_gpu twice more. Everything lands in
# $OUT/results.tgz; the summary is printed last.
set -u
H=$(cd "$(dirname "$0")" && pwd)
T=/tmp/kt B=/tmp/kb R=/tmp/res
mkdir -p $T $B $R
tar -xzf $H/tree.tgz -C $T && tar -xzf $H/bin.tgz -C $B || { echo "unpack failed"; exit 1; }
S=$R/summary.txt
say() { echo "$*" | tee -a $S; }
say "start $(date -u)"
nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.sm,clocks.max.sm,clocks.mem --format=csv 2>&1 | tee -a $S
# 1. The plans of every shape and tuning, main's build against the branch's.
$B/plan_dump_old > $R/plans-old.txt 2>&1; say "plan_dump_old rc $?"
$B/plan_dump_new > $R/plans-new.txt 2>&1; say "plan_dump_new rc $?"
grep '^limits:' $R/plans-new.txt | tee -a $S
if grep -v '^limits:' $R/plans-new.txt | cmp -s $R/plans-old.txt -; then
  say "plans: identical, $(wc -l < $R/plans-old.txt) lines, $(grep -c ' rc 0 ' $R/plans-old.txt) with rc 0"
else
  say "plans: DIFFER"; grep -v '^limits:' $R/plans-new.txt | diff $R/plans-old.txt - | head -20 | tee -a $S
fi
# 2. SASS of fast.cu (both builds link it whole), the anonymous namespace's hash normalised.
for v in old new; do
  cuobjdump -sass $B/plan_dump_$v | sed -E 's/_[0-9a-f]{8}_7_fast_cu_[0-9a-f]{8}/_HASH_7_fast_cu_HASH/g' > /tmp/sass-$v.txt
  say "sass $v: $(wc -l < /tmp/sass-$v.txt) lines, $(grep -c 'Function :' /tmp/sass-$v.txt) functions, $(sha256sum < /tmp/sass-$v.txt | cut -c1-16)"
done
if ! grep -q 'Function :' /tmp/sass-old.txt; then say "sass: none read"
elif cmp -s /tmp/sass-old.txt /tmp/sass-new.txt; then say "sass: identical"
else say "sass: DIFFER"; diff /tmp/sass-old.txt /tmp/sass-new.txt | head -20 | tee -a $S; fi
grep 'Function :' /tmp/sass-new.txt | sort | uniq -c | head -40 > $R/sass-functions.txt
# 3. The device check of the branch's tree and binaries.
cd $T
bash bench/gpu/device_check.sh $B $R/dc "kernel branch $(cat $H/label)" > $R/device-check.out 2>&1
say "device_check rc $?"; tail -12 $R/device-check.out | tee -a $S
# 4. test_gpu twice more.
for i in 2 3; do
  KI_TEST_DATA_DIR=$T/tests/data KI_GQA_KERNELS_SO=$B/libki_gqa_kernels.so $B/test_gpu > $R/gpu-tests-$i.log 2>&1
  say "test_gpu run $i rc $?: $(tail -2 $R/gpu-tests-$i.log | tr '\n' ' ')"
done
say "end $(date -u)"
nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv 2>&1 | tee -a $S
tar -czf $OUT/results.tgz -C /tmp res
cp $S $OUT/summary.txt
