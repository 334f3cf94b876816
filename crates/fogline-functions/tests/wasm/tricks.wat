;; Echoes each record, except by its first byte:
;; 'L' spins until the fuel runs out, 'G' grows memory by 100 pages (6.4 MB),
;; 'F' gives no result, 'O' returns a range outside memory.
;; A global counts the records this instance has seen; 'C' answers with it as one byte
;; ('0' + count), to show a trap resets the instance.
(module
  (memory (export "memory") 1)
  (global $seen (mut i32) (i32.const 0))
  (func (export "alloc") (param $len i32) (result i32) (i32.const 1024))
  (func (export "process") (param $ptr i32) (param $len i32) (result i64)
    (local $c i32)
    (global.set $seen (i32.add (global.get $seen) (i32.const 1)))
    (local.set $c (i32.load8_u (local.get $ptr)))
    (if (i32.eq (local.get $c) (i32.const 76))
      (then (loop $spin (br $spin))))
    (if (i32.eq (local.get $c) (i32.const 71))
      (then (drop (memory.grow (i32.const 100)))))
    (if (i32.eq (local.get $c) (i32.const 70))
      (then (return (i64.const 0))))
    (if (i32.eq (local.get $c) (i32.const 79))
      (then (return (i64.const 0xffff000000000010))))
    (if (i32.eq (local.get $c) (i32.const 67))
      (then
        (i32.store8 (i32.const 0) (i32.add (global.get $seen) (i32.const 48)))
        (return (i64.const 1))))
    (i64.or
      (i64.shl (i64.extend_i32_u (local.get $ptr)) (i64.const 32))
      (i64.extend_i32_u (local.get $len)))))
