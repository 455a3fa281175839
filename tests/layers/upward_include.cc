// Compiled by the layer_cannot_include_a_layer_above test against sim/core's include root: it
// must fail, because core does not declare run (sim/layers.cmake).
#include "sim/run/step_simulation.h"
