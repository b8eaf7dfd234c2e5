// Combinational wrapper around the MXU's arithmetic, so a unit test can drive
// millions of operand pairs through the RTL functions and compare them with the
// host's IEEE unit (testbench/cosim/mxu/fp_check.cpp).
module mxu_fp_check (
    input  logic [15:0] mul_a,
    input  logic [15:0] mul_b,
    output logic [31:0] mul_y,
    input  logic [31:0] add_a,
    input  logic [31:0] add_b,
    output logic [31:0] add_y
);
  import mxu_fp_pkg::*;
  assign mul_y = fmul_bf16(mul_a, mul_b);
  assign add_y = fadd_f32(add_a, add_b);
endmodule
