// IEEE-754 binary32 arithmetic for the MXU, written for this project:
//  - fmul_bf16: the product of two bf16 values as an f32 (exact unless it
//    overflows or lands in the subnormal range, where it rounds to nearest even)
//  - fadd_f32: f32 + f32, round to nearest even
// Subnormal inputs and outputs are kept (no flush to zero); infinities follow
// IEEE (inf - inf and 0 * inf are NaN); every NaN result is the canonical
// quiet NaN 0x7FC00000, so NaN payloads never depend on operand order.
// The C++ model (sim/mxu) gets the same bits from the host's IEEE f32 unit.
package mxu_fp_pkg;

  localparam logic [31:0] CANONICAL_NAN = 32'h7FC0_0000;

  function automatic logic is_nan32(input logic [30:0] x);
    return x[30:23] == 8'hFF && x[22:0] != 23'd0;
  endfunction

  function automatic logic [31:0] canon_nan(input logic [31:0] x);
    return is_nan32(x[30:0]) ? CANONICAL_NAN : x;
  endfunction

  // bf16 x bf16 -> f32. The 8-bit significands give a 16-bit product, which
  // always fits a normal f32 significand; rounding is needed only below 2^-126.
  function automatic logic [31:0] fmul_bf16(input logic [15:0] a, input logic [15:0] b);
    logic sign;
    logic [7:0] ea, eb;
    logic [6:0] fa, fb;
    logic [7:0] ma, mb;
    logic [15:0] p;
    logic [4:0] lead;
    logic signed [10:0] xa, xb;  // effective exponents: a subnormal counts as 1
    logic signed [10:0] e;      // biased f32 exponent of the normalized product
    logic signed [10:0] sh;     // left shift that places p as a subnormal fraction
    logic [39:0] wide;
    logic [23:0] q;
    logic guard, sticky;
    sign = a[15] ^ b[15];
    ea = a[14:7];
    eb = b[14:7];
    fa = a[6:0];
    fb = b[6:0];
    if ((ea == 8'hFF && fa != 7'd0) || (eb == 8'hFF && fb != 7'd0)) return CANONICAL_NAN;
    if (ea == 8'hFF || eb == 8'hFF) begin
      // inf * 0 is invalid; inf * finite non-zero is inf
      if ((ea == 8'd0 && fa == 7'd0) || (eb == 8'd0 && fb == 7'd0)) return CANONICAL_NAN;
      return {sign, 8'hFF, 23'd0};
    end
    ma = {ea != 8'd0, fa};
    mb = {eb != 8'd0, fb};
    p = ma * mb;
    if (p == 16'd0) return {sign, 31'd0};
    lead = 5'd0;
    for (int i = 0; i < 16; i++) if (p[i]) lead = 5'(i);
    // value = p * 2^(ea' + eb' - 268) with ea' = max(ea, 1): exponent of the
    // leading one = lead + ea' + eb' - 268, biased by 127.
    xa = (ea == 8'd0) ? 11'sd1 : $signed({3'd0, ea});
    xb = (eb == 8'd0) ? 11'sd1 : $signed({3'd0, eb});
    e = $signed({6'd0, lead}) + xa + xb - 11'sd141;
    if (e >= 11'sd255) return {sign, 8'hFF, 23'd0};
    if (e >= 11'sd1) return {sign, e[7:0], 23'({p, 23'd0} >> lead)};
    // Subnormal: fraction = p * 2^(ea' + eb' - 119), rounded to nearest even.
    sh = xa + xb - 11'sd119;
    if (sh >= 11'sd0) return {sign, 31'({15'd0, p} << sh)};
    wide = {p, 24'd0};
    if (sh < -11'sd40) wide = 40'd0;
    else wide = wide >> (-sh);
    q = {8'd0, wide[39:24]};
    guard = wide[23];
    sticky = wide[22:0] != 23'd0 || (sh < -11'sd40);
    if (guard && (sticky || q[0])) q = q + 24'd1;  // may carry into the smallest normal
    return {sign, 7'd0, q};
  endfunction

  // f32 + f32, round to nearest even.
  function automatic logic [31:0] fadd_f32(input logic [31:0] a, input logic [31:0] b);
    logic a_nan, b_nan, a_inf, b_inf;
    logic [8:0] ea, eb, ex, ey, e;
    logic [26:0] mx, my, m;
    logic sx, sy;
    logic [8:0] d;
    logic sticky;
    logic [27:0] sum;
    logic [4:0] lz;
    logic [8:0] shift;
    logic [24:0] r;
    logic round_up;
    a_nan = is_nan32(a[30:0]);
    b_nan = is_nan32(b[30:0]);
    a_inf = a[30:23] == 8'hFF && a[22:0] == 23'd0;
    b_inf = b[30:23] == 8'hFF && b[22:0] == 23'd0;
    if (a_nan || b_nan) return CANONICAL_NAN;
    if (a_inf && b_inf) return a[31] == b[31] ? a : CANONICAL_NAN;
    if (a_inf) return a;
    if (b_inf) return b;
    // Effective exponents (subnormals count as exponent 1) and significands
    // with three extra low bits (guard, round, sticky).
    ea = {1'b0, a[30:23] == 8'd0 ? 8'd1 : a[30:23]};
    eb = {1'b0, b[30:23] == 8'd0 ? 8'd1 : b[30:23]};
    // x is the operand of larger magnitude
    if ({a[30:0]} >= {b[30:0]}) begin
      ex = ea; ey = eb; sx = a[31]; sy = b[31];
      mx = {a[30:23] != 8'd0, a[22:0], 3'd0};
      my = {b[30:23] != 8'd0, b[22:0], 3'd0};
    end else begin
      ex = eb; ey = ea; sx = b[31]; sy = a[31];
      mx = {b[30:23] != 8'd0, b[22:0], 3'd0};
      my = {a[30:23] != 8'd0, a[22:0], 3'd0};
    end
    d = ex - ey;
    if (d >= 9'd27) begin
      sticky = my != 27'd0;
      my = 27'd0;
    end else begin
      sticky = (my & ((27'd1 << d) - 27'd1)) != 27'd0;
      my = my >> d;
    end
    my[0] = my[0] | sticky;
    e = ex;
    if (sx == sy) begin
      sum = {1'b0, mx} + {1'b0, my};
      if (sum[27]) begin
        m = sum[27:1];
        m[0] = m[0] | sum[0];
        e = e + 9'd1;
      end else begin
        m = sum[26:0];
      end
    end else begin
      m = mx - my;
      if (m == 27'd0) return 32'd0;  // exact cancellation is +0 in round-to-nearest
      lz = 5'd0;
      for (int i = 0; i < 27; i++) if (m[i]) lz = 5'(26 - i);
      // normalize, but not below exponent 1 (the result is then subnormal)
      shift = (9'(lz) < e - 9'd1) ? 9'(lz) : e - 9'd1;
      m = m << shift;
      e = e - shift;
    end
    round_up = m[2] && (m[1] || m[0] || m[3]);
    r = {1'b0, m[26:3]} + {24'd0, round_up};
    if (r[24]) begin  // rounding carried out: 1.111.. -> 10.000..
      r = r >> 1;
      e = e + 9'd1;
    end
    if (e >= 9'd255) return {sx, 8'hFF, 23'd0};
    // hidden bit clear: subnormal (exponent field 0)
    return {sx, r[23] ? e[7:0] : 8'd0, r[22:0]};
  endfunction

  // s32 multiply-add of two int8 values (the low bytes), wrapping.
  function automatic logic [31:0] mac_s8(input logic [31:0] acc, input logic [7:0] a,
                                         input logic [7:0] b);
    logic signed [15:0] prod;
    prod = $signed(a) * $signed(b);
    return acc + {{16{prod[15]}}, prod};
  endfunction

  // What one PE adds to the partial sum coming down its column: a * w in the
  // row's dtype (bf16 -> f32, or int8 -> s32 wrapping); packed int8 (s8x2)
  // multiplies both byte pairs, low by low and high by high (K elements k and
  // k + N of the tile), with two 8x8 multipliers and one more adder.
  function automatic logic [31:0] pe_mac(input logic bf16, input logic s8x2,
                                         input logic [31:0] psum, input logic [15:0] a,
                                         input logic [15:0] w);
    if (bf16) return fadd_f32(psum, fmul_bf16(a, w));
    if (s8x2) return mac_s8(mac_s8(psum, a[7:0], w[7:0]), a[15:8], w[15:8]);
    return mac_s8(psum, a[7:0], w[7:0]);
  endfunction

endpackage
