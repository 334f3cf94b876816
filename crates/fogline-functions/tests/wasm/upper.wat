;; The crate docs' example: upper-cases ASCII text in place.
(module
  (memory (export "memory") 1)
  ;; One buffer at 1024, grown to fit each record.
  (func (export "alloc") (param $len i32) (result i32)
    (local $pages i32)
    (local.set $pages
      (i32.sub
        (i32.shr_u (i32.add (local.get $len) (i32.const 66559)) (i32.const 16))
        (memory.size)))
    (if (i32.gt_s (local.get $pages) (i32.const 0))
      (then (drop (memory.grow (local.get $pages)))))
    (i32.const 1024))
  (func (export "process") (param $ptr i32) (param $len i32) (result i64)
    (local $i i32) (local $c i32) (local $at i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (local.set $at (i32.add (local.get $ptr) (local.get $i)))
        (local.set $c (i32.load8_u (local.get $at)))
        (if (i32.lt_u (i32.sub (local.get $c) (i32.const 97)) (i32.const 26))
          (then (i32.store8 (local.get $at) (i32.sub (local.get $c) (i32.const 32)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i64.or
      (i64.shl (i64.extend_i32_u (local.get $ptr)) (i64.const 32))
      (i64.extend_i32_u (local.get $len)))))
