#include "sim/config/text_proto.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "sim/core/input_file.h"

namespace cs {

namespace {

// Keeps the first error only: the ones after it are mostly its echoes.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (found_) return;
    found_ = true;
    line_ = line;
    column_ = column;
    message_ = message;
  }

  bool found() const { return found_; }
  // Protobuf counts lines and columns from 0; editors and compilers from 1.
  std::string located(const std::string& source) const {
    return source + ":" + std::to_string(line_ + 1) + ":" + std::to_string(column_ + 1) + ": " +
           message_;
  }

 private:
  bool found_ = false;
  int line_ = 0;
  int column_ = 0;
  std::string message_;
};

}  // namespace

void parse_text_proto(std::string_view text, const std::string& source_name,
                      google::protobuf::Message* out) {
  out->Clear();
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), out)) {
    if (errors.found()) throw ConfigError(errors.located(source_name));
    throw ConfigError(source_name + ": not a " + out->GetTypeName() + " in protobuf text format");
  }
}

std::string read_text_file(const std::string& path) {
  InputFile file = read_input_file(path, kMaxTextConfigBytes, "protobuf text config");
  // The error names the path and the system's reason ("cannot open (No such file or
  // directory)"): a bare "cannot be read" left a missing file and a forbidden one alike.
  if (!file.ok()) throw ConfigError(file.error);
  return std::move(file.bytes);
}

}  // namespace cs
