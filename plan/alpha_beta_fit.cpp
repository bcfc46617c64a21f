// Weighted least squares with weights w_i = 1 / t_i^2 (relative residuals). About the weighted
// means xm = sum w x / sum w and tm = sum w t / sum w (centred, so the sums do not cancel):
//   beta = sum w (x - xm)(t - tm) / sum w (x - xm)^2,  alpha = tm - beta xm.
// The boundary solutions (alpha = 0 or beta = 0) are the one-parameter fits of the same objective.
#include "plan/alpha_beta_fit.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace shardlab {

AlphaBeta fit_alpha_beta(const std::vector<double>& x, const std::vector<double>& t) {
    check(x.size() == t.size(), "fit_alpha_beta: as many sizes as times");
    check(std::set<double>(x.begin(), x.end()).size() >= 2,
          "fit_alpha_beta: needs at least two distinct message sizes");
    double sw = 0, swx = 0, swt = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        check(x[i] >= 0 && t[i] > 0 && std::isfinite(t[i]),
              "fit_alpha_beta: sizes must be >= 0 and times > 0");
        const double w = 1.0 / (t[i] * t[i]);
        sw += w, swx += w * x[i], swt += w * t[i];
    }
    const double xm = swx / sw, tm = swt / sw;
    double sxx = 0, sxt = 0, swxx = 0, swxt = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double w = 1.0 / (t[i] * t[i]);
        sxx += w * (x[i] - xm) * (x[i] - xm), sxt += w * (x[i] - xm) * (t[i] - tm);
        swxx += w * x[i] * x[i], swxt += w * x[i] * t[i];
    }
    AlphaBeta f{tm - sxt / sxx * xm, sxt / sxx}; // sxx > 0: two distinct x
    if (f.alpha_s < 0) f = {0.0, swxt / swxx};   // through the origin
    if (f.beta_s_per_byte < 0) f = {tm, 0.0};    // constant: the weighted mean
    return f;
}

double max_relative_residual(const AlphaBeta& f, const std::vector<double>& x,
                             const std::vector<double>& t) {
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
        worst = std::max(worst, std::abs(f.seconds(x[i]) - t[i]) / t[i]);
    return worst;
}

} // namespace shardlab
