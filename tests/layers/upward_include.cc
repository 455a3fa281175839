// Compiled by the layer_cannot_include_a_layer_above test against sim/core's include root: it
// must fail, because config is above core (sim/layers.cmake). The header includes nothing else,
// so the only way to fail is this line.
#include "sim/config/config_error.h"
