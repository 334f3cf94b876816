;; Doubles a signed decimal integer: "21" -> "42". Anything else traps.
(module
  (memory (export "memory") 1)
  ;; Inputs go at 1024 (up to 3072 bytes); results are written below 4128.
  (func (export "alloc") (param $len i32) (result i32)
    (if (i32.gt_u (local.get $len) (i32.const 3072)) (then unreachable))
    (i32.const 1024))
  (func (export "process") (param $ptr i32) (param $len i32) (result i64)
    (local $i i32) (local $neg i32) (local $c i32) (local $n i64) (local $at i32)
    (if (i32.eqz (local.get $len)) (then unreachable))
    (if (i32.eq (i32.load8_u (local.get $ptr)) (i32.const 45))
      (then (local.set $neg (i32.const 1)) (local.set $i (i32.const 1))))
    (block $done
      (loop $digit
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (local.set $c
          (i32.sub (i32.load8_u (i32.add (local.get $ptr) (local.get $i))) (i32.const 48)))
        (if (i32.gt_u (local.get $c) (i32.const 9)) (then unreachable))
        (local.set $n
          (i64.add (i64.mul (local.get $n) (i64.const 10)) (i64.extend_i32_u (local.get $c))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $digit)))
    (local.set $n (i64.mul (local.get $n) (i64.const 2)))
    (local.set $at (i32.const 4128))
    (loop $out
      (local.set $at (i32.sub (local.get $at) (i32.const 1)))
      (i32.store8 (local.get $at)
        (i32.add (i32.wrap_i64 (i64.rem_u (local.get $n) (i64.const 10))) (i32.const 48)))
      (local.set $n (i64.div_u (local.get $n) (i64.const 10)))
      (br_if $out (i64.ne (local.get $n) (i64.const 0))))
    (if (local.get $neg)
      (then
        (local.set $at (i32.sub (local.get $at) (i32.const 1)))
        (i32.store8 (local.get $at) (i32.const 45))))
    (i64.or
      (i64.shl (i64.extend_i32_u (local.get $at)) (i64.const 32))
      (i64.extend_i32_u (i32.sub (i32.const 4128) (local.get $at))))))
