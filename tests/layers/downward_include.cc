// Compiled by the layer_includes_a_layer_below test against sim/run's include root: it must
// compile, because run reaches core through its declared layers (sim/layers.cmake).
#include "sim/core/units.h"

int main() {
  return 0;
}
