// The alpha-beta (latency-bandwidth, Hockney) model of one step of a collective algorithm,
// t = alpha + beta * bytes, and its least-squares fit over a sweep of message sizes.
// docs/TIME.md "The alpha-beta model" derives it; `shardlab calibrate` fits it per collective and
// link class, and the time model (plan) evaluates it.
#pragma once

#include <vector>

namespace shardlab {

struct AlphaBeta {
    double alpha_s = 0;         // latency of one step (s)
    double beta_s_per_byte = 0; // inverse bandwidth (s/byte)
    double seconds(double bytes) const { return alpha_s + beta_s_per_byte * bytes; }
};

// Fits t = alpha + beta * x to the points (x[i], t[i]), minimising the sum of squared *relative*
// residuals, sum ((alpha + beta x_i - t_i) / t_i)^2: the sweep spans orders of magnitude in time,
// and an absolute fit would let the largest message decide alpha. Neither parameter is
// negative: where the unconstrained optimum has one below zero, the optimum with it at zero is
// returned (the constrained least-squares solution of a two-parameter problem). Exact for points
// on a line. Throws Error unless there are at least two distinct x, all x >= 0, all t > 0.
AlphaBeta fit_alpha_beta(const std::vector<double>& x, const std::vector<double>& t);

// The largest |predicted - t_i| / t_i over the points: how well a fit reproduces them.
double max_relative_residual(const AlphaBeta& f, const std::vector<double>& x,
                             const std::vector<double>& t);

} // namespace shardlab
