// The MXU: an N x N weight-stationary systolic array with its three command
// ports, as isa/README.md ("MXU") specifies cycle by cycle.
//
// Cycle convention: a command is accepted in cycle t when valid && ready in
// t (sampled at the rising edge that ends t). Row j of an mm accepted in t
// enters the LHS skew in cycle t + j; element k reaches PE(k, n) in
// t + j + k + n; the column sums leave the bottom row in t + j + N + n, the
// de-skew aligns them to t + j + 2N - 1, and the row is written into its
// result slot at the edge that ends that cycle: a pop can read it from
// t + j + 2N on. Ready signals depend only on state, except that a latch
// being accepted keeps an mm out of the same cycle (the latch uses both ports).
//
// SLOTS is the size of the result buffer in slots of 8 rows (a power of two up
// to 64, the slots the ISA's 6-bit field encodes); the slot ports are exactly
// as wide as it needs. No timing depends on it.
module mxu #(
    parameter int N = 8,
    parameter int SLOTS = 16,
    localparam int SW = $clog2(SLOTS)  // slot-number width
) (
    input  logic              clk,
    input  logic              rst,
    // weight port: wpush (op 0), wpush.t (op 1), latch (op 2)
    input  logic              w_valid,
    input  logic [1:0]        w_op,
    input  logic [8*N*16-1:0] w_data,    // sublane s, element i at bit (s*N + i)*16
    output logic              w_ready,
    // LHS port: mm / mma of 8 rows into slot l_slot
    input  logic              l_valid,
    input  logic              l_bf16,    // 1: bf16 x bf16 -> f32, 0: int8 x int8 -> s32
    input  logic              l_s8x2,    // with l_bf16 = 0: packed int8, two K elements per value
    input  logic              l_acc,     // 1: mma (add to the slot)
    input  logic [SW-1:0]     l_slot,
    input  logic [8*N*16-1:0] l_data,
    output logic              l_ready,
    // pop port: reads the 8 rows of slot p_slot in the cycle it is accepted
    input  logic              p_valid,
    input  logic [SW-1:0]     p_slot,
    output logic              p_ready,
    output logic [8*N*32-1:0] p_data,    // row j, column n at bit (j*N + n)*32
    // every result-buffer write, for observation (cosimulation, traces)
    output logic              r_valid,
    output logic [SW-1:0]     r_slot,
    output logic [2:0]        r_row,
    output logic [N*32-1:0]   r_data
);
  import mxu_fp_pkg::*;

  localparam logic [1:0] OP_PUSH = 2'd0, OP_PUSH_T = 2'd1, OP_LATCH = 2'd2;
  if (SLOTS < 2 || SLOTS > 64 || (SLOTS & (SLOTS - 1)) != 0) begin : g_bad_slots
    $error("mxu: SLOTS must be a power of two from 2 to 64");
  end

  // ---------------------------------------------------------------- weight port
  logic [2:0] w_j;            // row of the wpush in progress (1..7), 0 = idle
  logic w_trans_q;
  logic [15:0] w_base_q;      // 8p of the wpush in progress
  logic [15:0] w_pushes;      // wpushes since the last latch
  logic [8*N*16-1:0] w_buf;
  logic [15:0] lat_age;       // cycles since the last latch, saturating at N
  logic [2:0] l_j;            // row of the mm in progress (1..7), 0 = idle

  wire w_busy = w_j != 3'd0;
  wire l_busy = l_j != 3'd0;
  wire lat_old = lat_age >= 16'(N);
  wire latch_ok = !w_busy && !l_busy && lat_old;
  wire push_ok = !w_busy && (w_op == OP_PUSH || (w_op == OP_PUSH_T && lat_old));
  assign w_ready = (w_op == OP_LATCH) ? latch_ok : push_ok;
  wire latch_fire = w_valid && w_op == OP_LATCH && latch_ok;
  wire push_fire = w_valid && push_ok;

  // The staging write of this cycle: row/column 8p+j from sublane j.
  wire we_now = push_fire || w_busy;
  wire [2:0] wj_now = push_fire ? 3'd0 : w_j;
  wire trans_now = push_fire ? (w_op == OP_PUSH_T) : w_trans_q;
  wire [15:0] widx_now = (push_fire ? {w_pushes[12:0], 3'd0} : w_base_q) + 16'(wj_now);
  wire [N*16-1:0] wrow_now = push_fire ? w_data[0+:N*16] : w_buf[wj_now*N*16+:N*16];

  always_ff @(posedge clk) begin
    if (rst) begin
      w_j <= 3'd0;
      w_pushes <= 16'd0;
      lat_age <= 16'(N);
    end else begin
      if (push_fire) begin
        w_j <= 3'd1;
        w_trans_q <= w_op == OP_PUSH_T;
        w_base_q <= {w_pushes[12:0], 3'd0};
        w_pushes <= w_pushes + 16'd1;
      end else if (w_busy) begin
        w_j <= w_j + 3'd1;  // 7 wraps to 0: idle
      end
      if (latch_fire) begin
        w_pushes <= 16'd0;
        lat_age <= 16'd1;
      end else if (!lat_old) begin
        lat_age <= lat_age + 16'd1;
      end
    end
    if (push_fire) w_buf <= w_data;
  end

  // ------------------------------------------------------------------- LHS port
  logic l_bf16_q, l_s8x2_q, l_acc_q;
  logic [SW-1:0] l_slot_q;
  logic [8*N*16-1:0] l_buf;

  assign l_ready = !l_busy && !latch_fire;
  wire l_fire = l_valid && l_ready;

  always_ff @(posedge clk) begin
    if (rst) l_j <= 3'd0;
    else if (l_fire) l_j <= 3'd1;
    else if (l_busy) l_j <= l_j + 3'd1;
    if (l_fire) begin
      l_buf <= l_data;
      l_bf16_q <= l_bf16;
      l_s8x2_q <= l_s8x2;
      l_acc_q <= l_acc;
      l_slot_q <= l_slot;
    end
  end

  // The LHS row entering the array this cycle (row 0 straight from the port).
  wire in_valid = l_fire || l_busy;
  wire [2:0] in_j = l_fire ? 3'd0 : l_j;
  wire [N*16-1:0] in_row = l_fire ? l_data[0+:N*16] : l_buf[in_j*N*16+:N*16];
  wire in_bf16 = l_fire ? l_bf16 : l_bf16_q;
  wire in_s8x2 = l_fire ? l_s8x2 : l_s8x2_q;
  wire in_acc = l_fire ? l_acc : l_acc_q;
  wire [SW-1:0] in_slot = l_fire ? l_slot : l_slot_q;

  // ---------------------------------------------------------------------- array
  logic m_col_valid;  // the aligned row's valid from the array (equals m_valid)
  logic [N*32-1:0] col_sums;
  mxu_array #(.N(N)) array (
      .clk, .rst,
      .in_valid(in_valid), .in_latch(latch_fire), .in_bf16(in_bf16), .in_s8x2(in_s8x2),
      .in_row(in_row),
      .we(we_now), .trans(trans_now), .widx(widx_now), .wrow(wrow_now),
      .out_valid(m_col_valid), .out_sum(col_sums));

  // slot, row, accumulate and dtype of each row, 2N - 1 cycles behind its
  // entry: one shift register of META_W-bit entries (a single wide shift per cycle)
  localparam int META_DEPTH = 2 * N - 1;
  localparam int META_W = SW + 5;
  logic [META_DEPTH-1:0] meta_v;
  logic [META_DEPTH*META_W-1:0] meta_q;
  logic m_valid, m_acc, m_bf16;
  logic [SW-1:0] m_slot;
  logic [2:0] m_j;
  always_ff @(posedge clk) begin
    if (rst) meta_v <= '0;
    else meta_v <= {meta_v[META_DEPTH-2:0], in_valid};
    meta_q <= {meta_q[(META_DEPTH-1)*META_W-1:0], in_slot, in_j, in_acc, in_bf16};
  end
  assign m_valid = meta_v[META_DEPTH-1];
  assign {m_slot, m_j, m_acc, m_bf16} = meta_q[(META_DEPTH-1)*META_W+:META_W];

  // -------------------------------------------------------------- result buffer
  logic [N*32-1:0] rbuf[SLOTS*8];
  logic [SLOTS*8-1:0] written;  // a row never written reads as zero
  wire [SW+2:0] widx = {m_slot, m_j};
  wire [N*32-1:0] old_row = written[widx] ? rbuf[widx] : '0;
  logic [N*32-1:0] new_row;

  always_comb begin
    for (int n = 0; n < N; n++) begin
      logic [31:0] old_v, sum_v;
      old_v = old_row[n*32+:32];
      sum_v = col_sums[n*32+:32];
      new_row[n*32+:32] = m_bf16 ? canon_nan(m_acc ? fadd_f32(old_v, sum_v) : sum_v)
                                 : (m_acc ? old_v + sum_v : sum_v);
    end
  end

  always_ff @(posedge clk) begin
    if (rst) written <= '0;
    else if (m_valid) written[widx] <= 1'b1;
    if (m_valid) rbuf[widx] <= new_row;
  end

  assign r_valid = m_valid;
  assign r_slot = m_slot;
  assign r_row = m_j;
  assign r_data = new_row;

  // A slot is ready for a pop when no mm into it has rows in flight.
  logic [SLOTS-1:0] slot_busy;
  for (genvar s = 0; s < SLOTS; s++) begin : g_slot
    logic [7:0] in_flight;
    wire inc = l_fire && l_slot == SW'(s);
    wire dec = m_valid && m_j == 3'd7 && m_slot == SW'(s);
    always_ff @(posedge clk) begin
      if (rst) in_flight <= 8'd0;
      else in_flight <= in_flight + 8'(inc) - 8'(dec);
    end
    assign slot_busy[s] = in_flight != 8'd0;
  end

  assign p_ready = !slot_busy[p_slot];
  for (genvar j = 0; j < 8; j++) begin : g_pop
    wire [SW+2:0] ridx = {p_slot, 3'(j)};
    assign p_data[j*N*32+:N*32] = (p_valid && written[ridx]) ? rbuf[ridx] : '0;
  end

  // The array's own valid duplicates the metadata line's; kept for waveforms.
  wire unused_col_valid = m_col_valid;
endmodule
