// A delay line of DEPTH registers (DEPTH = 0 is a wire). `valid` and `tag`
// move every cycle; `data` is only loaded when valid, so an idle line costs
// nothing to simulate. Used for the LHS skew, the result de-skew and the
// result metadata. Stages are generate blocks (Verilator: no non-blocking
// writes to array elements inside for loops).
module mxu_pipe #(
    parameter int DEPTH = 1,
    parameter int W = 1
) (
    input  logic         clk,
    input  logic         rst,
    input  logic         in_valid,
    input  logic         in_tag,
    input  logic [W-1:0] in_data,
    output logic         out_valid,
    output logic         out_tag,
    output logic [W-1:0] out_data
);
  if (DEPTH == 0) begin : g_wire
    assign out_valid = in_valid;
    assign out_tag = in_tag;
    assign out_data = in_data;
    wire unused_clock = clk ^ rst;  // a zero-depth line has no registers
  end else begin : g_regs
    for (genvar i = 0; i < DEPTH; i++) begin : stage
      logic v, t;
      logic [W-1:0] d;
      logic pv, pt;
      logic [W-1:0] pd;
      if (i == 0) begin : g_first
        assign pv = in_valid;
        assign pt = in_tag;
        assign pd = in_data;
      end else begin : g_next
        assign pv = stage[i-1].v;
        assign pt = stage[i-1].t;
        assign pd = stage[i-1].d;
      end
      always_ff @(posedge clk) begin
        if (rst) begin
          v <= 1'b0;
          t <= 1'b0;
        end else begin
          v <= pv;
          t <= pt;
        end
        if (pv) d <= pd;
      end
    end
    assign out_valid = stage[DEPTH-1].v;
    assign out_tag = stage[DEPTH-1].t;
    assign out_data = stage[DEPTH-1].d;
  end
endmodule
