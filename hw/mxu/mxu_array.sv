// The N x N weight-stationary array with its LHS skew and result de-skew.
//
// PE(k, n) holds W[k][n]; LHS element k enters row k after k cycles of skew
// and moves one column right per cycle; partial sums move one row down per
// cycle (pe_mac in mxu_fp_pkg is the PE's arithmetic). Column n's sum leaves
// the bottom row n cycles after column 0's and waits N-1-n cycles in the
// de-skew, so a row that enters in cycle T comes out aligned in T + 2N - 1.
//
// Three weight registers per PE make double buffering exact (isa/README.md):
//  - stage: written by wpush (a whole row, or a whole column when transposed)
//  - pend:  the latch token reaching row k (cycle t_latch + k) copies the row's
//           stage here and clears stage, so new wpushes may write row k from
//           t_latch + k + 1 on
//  - act:   the token travels with the skewed LHS data and reaches PE(k, n) in
//           t_latch + k + n, between the last row that uses the old weights and
//           the first that uses the new ones. Column 0 takes stage directly
//           (its copy to pend happens in the same cycle).
//
// The state is held in N x N arrays updated in place by loops in one clocked
// block, in an order that reads every value before it is overwritten (columns
// and rows from the far end back, the de-skew before the bottom row). Other
// blocks see only the registered outputs, so the blocking updates cannot race.
// Why not N*N PE instances: with f32 arithmetic in every PE, Verilator 5.006
// emits C++ per instance (60 MB for N = 32); non-blocking writes to array
// elements inside loops are rejected (BLKLOOPINIT), and whole-array
// non-blocking copies are expanded per element. This form is one copy of the
// code for any N.
module mxu_array #(
    parameter int N = 8
) (
    input  logic            clk,
    input  logic            rst,
    // the LHS row entering the skew this cycle, and the latch token
    input  logic            in_valid,
    input  logic            in_latch,
    input  logic            in_bf16,
    input  logic            in_s8x2,   // with in_bf16 = 0: packed int8 (two K elements per value)
    input  logic [N*16-1:0] in_row,
    // the staging write of this cycle: row widx (or column widx if transposed)
    input  logic            we,
    input  logic            trans,
    input  logic [15:0]     widx,
    input  logic [N*16-1:0] wrow,
    // the de-skewed result row
    output logic            out_valid,
    output logic [N*32-1:0] out_sum
);
  import mxu_fp_pkg::*;

  // LHS skew: row k uses stages 0..k-1
  logic        sk_v[N][N], sk_l[N][N], sk_b[N][N], sk_p[N][N];
  logic [15:0] sk_a[N][N];
  // PE registers: the LHS value passed right, the partial sum passed down
  logic        a_v[N][N], a_l[N][N], a_b[N][N], a_p[N][N];
  logic [15:0] a_d[N][N];
  logic [31:0] ps[N][N];
  logic [15:0] w_stage[N][N], w_pend[N][N], w_act[N][N];
  // de-skew: column n uses stages 0..N-2-n
  logic        ds_v[N][N];
  logic [31:0] ds[N][N];

  always_ff @(posedge clk) begin : step
    /* verilator lint_off BLKSEQ */
    logic        rv, rl, rb, rp, iv, il, ib, ik;
    logic [15:0] ra, ia;
    logic [31:0] ip;
    logic [N*32-1:0] sums;

    // de-skew of column n: stage 0 takes the bottom row's (old) sum
    for (int n = 0; n < N - 1; n++) begin
      for (int d = N - 2 - n; d >= 1; d--) begin
        if (ds_v[n][d-1]) ds[n][d] = ds[n][d-1];
        ds_v[n][d] = !rst && ds_v[n][d-1];
      end
      if (a_v[N-1][n]) ds[n][0] = ps[N-1][n];
      ds_v[n][0] = !rst && a_v[N-1][n];
    end

    for (int k = N - 1; k >= 0; k--) begin
      // what reaches column 0 of row k this cycle: row 0 has no skew
      if (k == 0) begin
        rv = in_valid;
        rl = in_latch;
        rb = in_bf16;
        rp = in_s8x2;
        ra = in_row[15:0];
      end else begin
        rv = sk_v[k][k-1];
        rl = sk_l[k][k-1];
        rb = sk_b[k][k-1];
        rp = sk_p[k][k-1];
        ra = sk_a[k][k-1];
      end
      // the PEs of row k, right to left (each reads its left neighbour's old
      // value and the old partial sum of the row above, updated later)
      for (int n = N - 1; n >= 0; n--) begin
        if (n == 0) begin
          iv = rv;
          il = rl;
          ib = rb;
          ik = rp;
          ia = ra;
        end else begin
          iv = a_v[k][n-1];
          il = a_l[k][n-1];
          ib = a_b[k][n-1];
          ik = a_p[k][n-1];
          ia = a_d[k][n-1];
        end
        ip = (k == 0) ? 32'd0 : ps[k-1][n];
        if (iv) begin
          // PE(k, n): the arithmetic runs only for a valid row
          ps[k][n] = pe_mac(ib, ik, ip, ia, w_act[k][n]);
          a_b[k][n] = ib;
          a_p[k][n] = ik;
          a_d[k][n] = ia;
        end
        a_v[k][n] = !rst && iv;
        a_l[k][n] = !rst && il;
        if (rst) begin
          w_stage[k][n] = 16'd0;
          w_pend[k][n] = 16'd0;
          w_act[k][n] = 16'd0;
        end else begin
          if (il) w_act[k][n] = (n == 0) ? w_stage[k][n] : w_pend[k][n];
          if (rl) begin
            w_pend[k][n] = w_stage[k][n];
            w_stage[k][n] = 16'd0;
          end
          if (we && (trans ? widx == 16'(n) : widx == 16'(k)))
            w_stage[k][n] = trans ? wrow[k*16+:16] : wrow[n*16+:16];
        end
      end
      // the skew line of row k: stage 0 takes the entering row's element k
      for (int d = k - 1; d >= 1; d--) begin
        if (sk_v[k][d-1]) begin
          sk_b[k][d] = sk_b[k][d-1];
          sk_p[k][d] = sk_p[k][d-1];
          sk_a[k][d] = sk_a[k][d-1];
        end
        sk_v[k][d] = !rst && sk_v[k][d-1];
        sk_l[k][d] = !rst && sk_l[k][d-1];
      end
      if (k > 0) begin
        if (in_valid) begin
          sk_b[k][0] = in_bf16;
          sk_p[k][0] = in_s8x2;
          sk_a[k][0] = in_row[k*16+:16];
        end
        sk_v[k][0] = !rst && in_valid;
        sk_l[k][0] = !rst && in_latch;
      end
    end

    // The aligned result row as it is from the next cycle on: column n after
    // its N-1-n de-skew stages (column N-1 straight from the bottom row).
    for (int n = 0; n < N; n++) sums[n*32+:32] = (n == N - 1) ? ps[N-1][n] : ds[n][N-2-n];
    /* verilator lint_on BLKSEQ */
    out_sum <= sums;
    out_valid <= !rst && ds_v[0][N-2];
  end
endmodule
