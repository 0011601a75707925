// What weave-bench times of a Weave plan: C <- op(A) op(B) (alpha 1, beta 0)
// on the given buffers, enqueued on the timer's stream.
#pragma once

#include "bench_device.hpp"
#include "weave/weave.hpp"

namespace bench {

inline void run_plan(const weave::Plan& plan, Timer& timer, const Buffer& a, const Buffer& b, const Buffer& c) {
  weave_execute_args_t args{};
  args.alpha = 1.0;
  args.beta = 0.0;
  args.a = a.data();
  args.b = b.data();
  args.c = c.data();
  args.stream = timer.stream();
  plan.execute(args);
}

}  // namespace bench
