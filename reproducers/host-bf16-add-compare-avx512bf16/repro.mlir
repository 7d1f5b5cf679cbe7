func.func @kernel(%in: !llvm.ptr, %out: !llvm.ptr, %n: i64) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %count = arith.index_cast %n : i64 to index
  %m1 = arith.constant -1.0 : bf16
  %zero = arith.constant 0 : i16
  %minus = arith.constant -1 : i16
  scf.for %i = %c0 to %count step %c1 {
    %i64 = arith.index_cast %i : index to i64
    %pin = llvm.getelementptr %in[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, i16
    %raw = llvm.load %pin : !llvm.ptr -> i16
    %x = arith.bitcast %raw : i16 to bf16
    %a = arith.addf %x, %x : bf16
    %c = arith.cmpf ogt, %a, %m1 : bf16
    %r = arith.select %c, %zero, %minus : i16
    %pout = llvm.getelementptr %out[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, i16
    llvm.store %r, %pout : i16, !llvm.ptr
  }
  return
}
