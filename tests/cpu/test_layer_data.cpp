// The seeded layer data's command-line routing names (testing/layer_data.h), shared by `fusedmoe
// run --skew` and `fusedmoe bench --skew`.
#include <gtest/gtest.h>

#include "testing/layer_data.h"

namespace {

namespace ft = fusedmoe::testing;

TEST(LayerData, SkewNamesRoundTrip) {
  for (const ft::Skew s : {ft::Skew::kUniform, ft::Skew::kZipf, ft::Skew::kOneHot}) {
    ft::Skew back = s == ft::Skew::kUniform ? ft::Skew::kOneHot : ft::Skew::kUniform;
    ASSERT_TRUE(ft::parse_skew(ft::skew_name(s), &back)) << ft::skew_name(s);
    EXPECT_EQ(back, s);
  }
  EXPECT_STREQ(ft::skew_name(ft::Skew::kZipf), "zipf");
  ft::Skew untouched = ft::Skew::kZipf;
  EXPECT_FALSE(ft::parse_skew("Zipf", &untouched));
  EXPECT_FALSE(ft::parse_skew("", &untouched));
  EXPECT_EQ(untouched, ft::Skew::kZipf);
}

}  // namespace
