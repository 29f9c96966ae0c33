// fusedmoe/fusedmoe.h — umbrella header of the public C++ API.
#pragma once
#include "fusedmoe/activation.h"
#include "fusedmoe/device.h"
#include "fusedmoe/moe.h"
#include "fusedmoe/presets.h"
#include "fusedmoe/problem.h"
#include "fusedmoe/quant.h"
#include "fusedmoe/rope_quant.h"
#include "fusedmoe/router.h"
#include "fusedmoe/status.h"
#include "fusedmoe/types.h"
