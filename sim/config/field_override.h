// Sets one field of a protobuf message from "dotted.path=value" text, through reflection.
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <string>
#include <string_view>

namespace cs {

// `assignment` is "parallel.pp=8", "model.activation=SWIGLU", "parallel.sequence_parallel=true"
// or, for repeated fields, "parallel.layers_per_stage=8,8,9,7". Throws ConfigError naming the
// path and the reason: an unknown field (listing the fields that exist there), a value that
// does not parse or does not fit the field's type, or an unknown enum name (listing the names).
// The message starts with `option` and the path ("--vary parallel.foo: ..."): the flag the user
// gave the assignment with.
void apply_override(google::protobuf::Message& message, std::string_view assignment,
                    std::string_view option = "--set");

// The value at `path` ("parallel.tp", "model.norm") as --set would write it: numbers, true /
// false, enum names; a message field reads "set" or "unset", a repeated field its values joined
// by commas ("" when empty). Throws ConfigError naming the path when no such field exists.
std::string field_text(const google::protobuf::Message& message, std::string_view path);
// The same for field `f` of `m`, found by its descriptor.
std::string field_value_text(const google::protobuf::Message& m,
                             const google::protobuf::FieldDescriptor& f);

}  // namespace cs
