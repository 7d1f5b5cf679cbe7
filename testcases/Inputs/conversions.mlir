func.func @conversions(%x: f32) -> (i32, i32) {
  %f = math.floor %x : f32
  %0 = arith.fptosi %f : f32 to i32
  %1 = arith.bitcast %x : f32 to i32
  return %0, %1 : i32, i32
}
