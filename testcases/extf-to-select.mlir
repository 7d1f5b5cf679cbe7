// RUN: lowering-opt %s --split-input-file -p 'builtin.module(extf-to-select)' 2>&1 | filecheck %s
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(extf-to-select{arch=sm_90a})' 2>&1 | filecheck %s --check-prefix=SM90
// RUN: lowering-opt %s --split-input-file -p 'builtin.module(extf-to-select{arch=sm_100a})' --statistics 2>&1 | filecheck %s --check-prefix=SM100

// CHECK-LABEL: func.func @e2m1_vector
// CHECK: %[[RAW:.*]] = arith.bitcast %arg0 : vector<8xf4E2M1FN> to vector<8xi4>
// CHECK: %[[CODE:.*]] = arith.extui %[[RAW]] : vector<8xi4> to vector<8xi32>
// CHECK: %[[MAG:.*]] = arith.andi %[[CODE]], %{{.*}} : vector<8xi32>
// CHECK: arith.uitofp %[[MAG]] : vector<8xi32> to vector<8xf32>
// CHECK: arith.select
// CHECK: %[[V:.*]] = arith.bitcast %{{.*}} : vector<8xi32> to vector<8xf32>
// CHECK-NOT: arith.extf
// CHECK: return %[[V]]
// SM90-LABEL: func.func @e2m1_vector
// SM90-NOT: arith.extf
// SM100-LABEL: func.func @e2m1_vector
// SM100: arith.extf %arg0 : vector<8xf4E2M1FN> to vector<8xf32>
func.func @e2m1_vector(%q: vector<8xf4E2M1FN>) -> vector<8xf32> {
  %0 = arith.extf %q : vector<8xf4E2M1FN> to vector<8xf32>
  return %0 : vector<8xf32>
}

// -----
// E4M3: S.1111.111 is NaN; f16 destinations go through f32.
// CHECK-LABEL: func.func @e4m3_to_f16
// CHECK: %[[ISNAN:.*]] = arith.cmpi eq, %{{.*}}, %c127_i32{{.*}} : i32
// CHECK: %[[NAN:.*]] = arith.constant 2143289344 : i32
// CHECK: arith.select %[[ISNAN]], %[[NAN]], %{{.*}} : i32
// CHECK: %[[F:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK: arith.truncf %[[F]] : f32 to f16
// SM90-LABEL: func.func @e4m3_to_f16
// SM90: arith.extf %arg0 : f8E4M3FN to f16
func.func @e4m3_to_f16(%q: f8E4M3FN) -> f16 {
  %0 = arith.extf %q : f8E4M3FN to f16
  return %0 : f16
}

// -----
// E5M2 keeps IEEE inf and NaN.
// CHECK-LABEL: func.func @e5m2
// CHECK-DAG: arith.constant 2139095040 : i32
// CHECK-DAG: arith.constant 124 : i32
func.func @e5m2(%q: f8E5M2) -> f32 {
  %0 = arith.extf %q : f8E5M2 to f32
  return %0 : f32
}

// -----
// E8M0: 2^(code-127); 0x00 is 2^-127 (0x00400000), 0xFF NaN.
// CHECK-LABEL: func.func @e8m0
// CHECK: arith.shli
// CHECK-DAG: arith.constant 4194304 : i32
// CHECK-DAG: arith.constant 255 : i32
// SM90-LABEL: func.func @e8m0
// SM90-NOT: arith.extf
// SM100: arith.extf %arg0 : f8E8M0FNU to f32
// SM100: 'extf-to-select'
// SM100: (S) 0 rewritten
// SM100: (S) 0 left
// SM100: (S) 4 native
func.func @e8m0(%q: f8E8M0FNU) -> f32 {
  %0 = arith.extf %q : f8E8M0FNU to f32
  return %0 : f32
}
