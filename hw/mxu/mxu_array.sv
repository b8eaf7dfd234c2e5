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
// The state is held in N x N arrays updated by loops rather than as N*N PE
// instances: with f32 arithmetic in every PE, Verilator 5.006 emits C++ per
// instance (60 MB for N = 32), while the loops stay one copy for any N.
// Next state is computed once per clock edge into block-local variables and
// registered by whole-array assignments (Verilator 5.006 rejects non-blocking
// writes to array elements inside loops; computing it in always_comb would
// redo the N x N loops on every input change).
module mxu_array #(
    parameter int N = 8
) (
    input  logic            clk,
    input  logic            rst,
    // the LHS row entering the skew this cycle, and the latch token
    input  logic            in_valid,
    input  logic            in_latch,
    input  logic            in_bf16,
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

  // Every N x N quantity is held as N rows of packed bits (element [k][n] at
  // bits n*W +: W of row k), so registering it is N wide copies, not N*N.
  // LHS skew: row k uses stages 0..k-1
  logic [N-1:0]    sk_v[N], sk_l[N], sk_b[N];
  logic [N*16-1:0] sk_a[N];
  // PE registers: the LHS value passed right, the partial sum passed down
  logic [N-1:0]    a_v[N], a_l[N], a_b[N];
  logic [N*16-1:0] a_d[N];
  logic [N-1:0]    ps_v[N];
  logic [N*32-1:0] ps[N];
  logic [N*16-1:0] w_stage[N], w_pend[N], w_act[N];
  // de-skew: column n uses stages 0..N-2-n
  logic [N-1:0]    ds_v[N];
  logic [N*32-1:0] ds[N];

  always_ff @(posedge clk) begin : step
    // Next-state temporaries, written with blocking assignments and only read
    // within this block.
    /* verilator lint_off BLKSEQ */
    logic [N-1:0]    sk_v_n[N], sk_l_n[N], sk_b_n[N];
    logic [N*16-1:0] sk_a_n[N];
    logic [N-1:0]    a_v_n[N], a_l_n[N], a_b_n[N];
    logic [N*16-1:0] a_d_n[N];
    logic [N-1:0]    ps_v_n[N];
    logic [N*32-1:0] ps_n[N];
    logic [N*16-1:0] w_stage_n[N], w_pend_n[N], w_act_n[N];
    logic [N-1:0]    ds_v_n[N];
    logic [N*32-1:0] ds_n[N];
    logic            rv, rl, rb, iv, il, ib;
    logic [15:0]     ra, ia;
    logic [31:0]     ip;

    for (int k = 0; k < N; k++) begin
      // the skew line of row k: stage 0 takes the entering row's element k
      sk_v_n[k] = {sk_v[k][N-2:0], in_valid} & {N{!rst}};
      sk_l_n[k] = {sk_l[k][N-2:0], in_latch} & {N{!rst}};
      sk_b_n[k] = sk_b[k];
      sk_a_n[k] = sk_a[k];
      for (int d = 0; d < k; d++) begin
        if (d == 0) begin
          if (in_valid) begin
            sk_b_n[k][0] = in_bf16;
            sk_a_n[k][15:0] = in_row[k*16+:16];
          end
        end else if (sk_v[k][d-1]) begin
          sk_b_n[k][d] = sk_b[k][d-1];
          sk_a_n[k][d*16+:16] = sk_a[k][(d-1)*16+:16];
        end
      end
      // what reaches column 0 of row k: row 0 has no skew
      if (k == 0) begin
        rv = in_valid;
        rl = in_latch;
        rb = in_bf16;
        ra = in_row[15:0];
      end else begin
        rv = sk_v[k][k-1];
        rl = sk_l[k][k-1];
        rb = sk_b[k][k-1];
        ra = sk_a[k][(k-1)*16+:16];
      end

      // the PEs of row k; unchanged unless a row, a latch or a weight write passes
      a_b_n[k] = a_b[k];
      a_d_n[k] = a_d[k];
      ps_n[k] = ps[k];
      w_stage_n[k] = rst ? '0 : w_stage[k];
      w_pend_n[k] = rst ? '0 : w_pend[k];
      w_act_n[k] = rst ? '0 : w_act[k];
      a_v_n[k] = {a_v[k][N-2:0], rv} & {N{!rst}};
      a_l_n[k] = {a_l[k][N-2:0], rl} & {N{!rst}};
      ps_v_n[k] = {a_v[k][N-2:0], rv} & {N{!rst}};
      for (int n = 0; n < N; n++) begin
        if (n == 0) begin
          iv = rv;
          il = rl;
          ib = rb;
          ia = ra;
        end else begin
          iv = a_v[k][n-1];
          il = a_l[k][n-1];
          ib = a_b[k][n-1];
          ia = a_d[k][(n-1)*16+:16];
        end
        if (iv) begin
          // PE(k, n): the arithmetic runs only for a valid row
          ip = (k == 0) ? 32'd0 : ps[k-1][n*32+:32];
          a_b_n[k][n] = ib;
          a_d_n[k][n*16+:16] = ia;
          ps_n[k][n*32+:32] = pe_mac(ib, ip, ia, w_act[k][n*16+:16]);
        end
        if (!rst) begin
          if (il) w_act_n[k][n*16+:16] = (n == 0) ? w_stage[k][n*16+:16] : w_pend[k][n*16+:16];
          if (rl) begin
            w_pend_n[k][n*16+:16] = w_stage[k][n*16+:16];
            w_stage_n[k][n*16+:16] = 16'd0;
          end
          if (we && (trans ? widx == 16'(n) : widx == 16'(k)))
            w_stage_n[k][n*16+:16] = trans ? wrow[k*16+:16] : wrow[n*16+:16];
        end
      end
    end

    // the de-skew of column n: stage 0 takes the bottom row's sum
    for (int n = 0; n < N; n++) begin
      ds_v_n[n] = {ds_v[n][N-2:0], ps_v[N-1][n]} & {N{!rst}};
      ds_n[n] = ds[n];
      for (int d = 0; d < N - 1 - n; d++) begin
        if (d == 0) begin
          if (ps_v[N-1][n]) ds_n[n][31:0] = ps[N-1][n*32+:32];
        end else if (ds_v[n][d-1]) begin
          ds_n[n][d*32+:32] = ds[n][(d-1)*32+:32];
        end
      end
    end
    /* verilator lint_on BLKSEQ */

    sk_v <= sk_v_n;
    sk_l <= sk_l_n;
    sk_b <= sk_b_n;
    sk_a <= sk_a_n;
    a_v <= a_v_n;
    a_l <= a_l_n;
    a_b <= a_b_n;
    a_d <= a_d_n;
    ps_v <= ps_v_n;
    ps <= ps_n;
    w_stage <= w_stage_n;
    w_pend <= w_pend_n;
    w_act <= w_act_n;
    ds_v <= ds_v_n;
    ds <= ds_n;
  end

  // The aligned result row: column n after its N-1-n de-skew stages.
  always_comb begin
    for (int n = 0; n < N; n++)
      out_sum[n*32+:32] = (n == N - 1) ? ps[N-1][n*32+:32] : ds[n][(N-2-n)*32+:32];
    out_valid = ds_v[0][N-2];
  end
endmodule
