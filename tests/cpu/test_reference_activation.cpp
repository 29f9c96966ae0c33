// Each expert activation of fusedmoe/activation.h, at hand-computed points.
#include <gtest/gtest.h>

#include <cmath>

#include "fusedmoe/reference.h"

namespace fm = fusedmoe;
namespace ref = fusedmoe::ref;

namespace {

// Expected values from the closed forms evaluated by hand (float64, Python's math module).
void expect_act(const fm::Activation& a, double g, double u, double expected) {
  EXPECT_NEAR(ref::activate(a, g, u), expected, 1e-13 * std::max(1.0, std::fabs(expected)))
      << fm::to_string(a.kind) << "(g=" << g << ", u=" << u << ")";
}

TEST(ReferenceActivation, SiluGated) {
  const fm::Activation a = fm::Activation::silu();
  expect_act(a, 1.0, 2.0, 1.4621171572600098);  // 1 / (1 + e^-1) * 2
  expect_act(a, -2.0, 1.0, -0.2384058440442351);
  expect_act(a, 3.0, -0.5, -1.42886119023365);
  expect_act(a, 0.0, 5.0, 0.0);
}

TEST(ReferenceActivation, GeluErfGated) {
  const fm::Activation a = fm::Activation::gelu();
  expect_act(a, 1.0, 1.0, 0.8413447460685429);  // Phi(1)
  expect_act(a, -1.0, 3.0, -0.4759657617943712);
  expect_act(a, 2.0, 0.5, 0.9772498680518208);
  expect_act(a, 0.0, 1.0, 0.0);
}

// The negative tails keep their relative precision (1 + erf / 1 + tanh would cancel to nothing).
TEST(ReferenceActivation, GeluTailsAreRelativelyExact) {
  const double e = ref::activate(fm::Activation::gelu(), -10.0, 1.0);
  EXPECT_NEAR(e, -7.619853024160593e-23, 1e-12 * 7.619853024160593e-23);  // -10 Phi(-10)
  const double t = ref::activate(fm::Activation{fm::ActivationKind::kGeluTanhGated}, -6.0, 1.0);
  EXPECT_NEAR(t, -8.43964670076231e-11, 1e-12 * 8.43964670076231e-11);
}

TEST(ReferenceActivation, GeluTanhGated) {
  const fm::Activation a{fm::ActivationKind::kGeluTanhGated};
  expect_act(a, 1.0, 1.0, 0.8411919906082768);
  expect_act(a, -1.0, 3.0, -0.4764240281751697);
  expect_act(a, 2.0, 0.5, 0.9772988470438875);
}

TEST(ReferenceActivation, ClampedSwiglu) {
  const fm::Activation a = fm::Activation::clamped_swiglu(10.f);
  expect_act(a, 12.0, -15.0, -99.99546021312977);  // silu(10) * -10: both sides clamp
  expect_act(a, -12.0, 3.0, -0.00022119028567972983);  // the gate is only clamped from above
  expect_act(a, 1.0, 2.0, 1.4621171572600098);      // inside the limit: plain silu * u
}

TEST(ReferenceActivation, SwigluOai) {
  const fm::Activation a = fm::Activation::swiglu_oai(1.702f, 7.f);
  EXPECT_TRUE(a.interleaved);
  // (clamp(u, -7, 7) + 1) * min(g, 7) * sigmoid(alpha * min(g, 7)), alpha = float(1.702)
  expect_act(a, 1.0, 0.5, 1.268693653190454);
  expect_act(a, 8.0, -9.0, -41.99971876986309);
  expect_act(a, -3.0, 1.0, -0.03614261705158655);
  expect_act(a, 2.0, 20.0, 15.485269007007972);
}

TEST(ReferenceActivation, SquaredRelu) {
  const fm::Activation a = fm::Activation::squared_relu();
  EXPECT_FALSE(a.gated());
  expect_act(a, 3.0, 123.0, 9.0);  // u is ignored
  expect_act(a, -2.0, 0.0, 0.0);
  expect_act(a, 0.5, 0.0, 0.25);
}

}  // namespace
