// Reports as JSON: nlohmann-json documents, printed with stable, shortest round-trip numbers.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace cs::report {

// Keys print in the order they were set, so a report reads top-down and diffs line by line.
using Json = nlohmann::ordered_json;

// nlohmann-json holds the document, escapes strings (invalid UTF-8 becomes U+FFFD) and prints
// integers, booleans and null; doubles print through std::to_chars, the shortest form that reads
// back to the same double and the closest of those ("4", "0.1", "1e+05"). nlohmann's own Grisu2
// printer gives a longer or a different last digit for about 0.5% of doubles and "4.0" for
// integral ones, which would change every report's bytes. NaN and infinities print as null.

// Writes `doc` indented by two spaces, one value per line, with a final newline.
void write_document(std::ostream& out, const Json& doc);

// `value` on one line with ", " and ": " between items: one record of a file written record by
// record (a timeline), so that no document of the whole file is ever built.
std::string one_line(const Json& value);

}  // namespace cs::report
