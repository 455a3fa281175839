#include "sim/coll/algorithms/registry.h"

#include <stdexcept>
#include <string>

#include "sim/coll/algorithms/entries.h"

namespace cs::coll {

const OpForm* AlgorithmInfo::form(Op op) const {
  for (const OpForm& f : ops) {
    if (f.op == op) return &f;
  }
  return nullptr;
}

const std::vector<AlgorithmInfo>& algorithm_table() {
  // A function-local static: built on first use, so no static initialiser elsewhere can see it
  // half-built.
  static const std::vector<AlgorithmInfo> table = {
      ring_algorithm(), tree_algorithm(),      hierarchical_algorithm(), direct_algorithm(),
      nvls_algorithm(), nvls_tree_algorithm(), pat_algorithm(),          chain_tree_algorithm(),
  };
  return table;
}

const AlgorithmInfo& algorithm_info(Algorithm algo) {
  for (const AlgorithmInfo& a : algorithm_table()) {
    if (a.value == algo) return a;
  }
  throw std::invalid_argument("no table entry for collective algorithm " +
                              std::to_string(static_cast<int>(algo)));
}

const OpForm* find_form(Algorithm algo, Op op) {
  for (const AlgorithmInfo& a : algorithm_table()) {
    if (a.value == algo) return a.form(op);
  }
  return nullptr;
}

}  // namespace cs::coll
