// Internal helpers to build Status values with a streamed message.
#pragma once
#include <sstream>

#include "fusedmoe/status.h"

// Returns Status(code, message) from the enclosing function unless `cond` holds.
#define FM_REQUIRE(cond, code, msg)                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::ostringstream fm_os_;                                               \
      fm_os_ << msg;                                                           \
      return ::fusedmoe::Status(::fusedmoe::StatusCode::code, fm_os_.str());   \
    }                                                                          \
  } while (0)

// Propagates a non-ok Status.
#define FM_TRY(expr)                              \
  do {                                            \
    ::fusedmoe::Status fm_st_ = (expr);           \
    if (!fm_st_.ok()) return fm_st_;              \
  } while (0)
