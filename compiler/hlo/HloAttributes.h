// Typed instruction attributes (the `, key=value` parts of an HLO instruction).
// HloInstruction::Attributes (HloInstruction.h) holds one of each; the structs
// here are the values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tpusim::hlo {

class HloComputation;

// compare(...), direction=LT
enum class ComparisonDirection { EQ, NE, LT, LE, GT, GE };
const char* comparisonDirectionName(ComparisonDirection d);
std::optional<ComparisonDirection> parseComparisonDirection(const std::string& s);

// slice={[start:limit:stride], ...}; stride 1 when omitted.
struct SliceDim {
  int64_t start = 0, limit = 0, stride = 1;
  bool operator==(const SliceDim& o) const {
    return start == o.start && limit == o.limit && stride == o.stride;
  }
};

// dot: lhs_batch_dims, lhs_contracting_dims, rhs_batch_dims, rhs_contracting_dims.
struct DotDimensionNumbers {
  std::vector<int64_t> lhsBatch, lhsContracting, rhsBatch, rhsContracting;
  bool empty() const {
    return lhsBatch.empty() && lhsContracting.empty() && rhsBatch.empty() && rhsContracting.empty();
  }
  bool operator==(const DotDimensionNumbers& o) const {
    return lhsBatch == o.lhsBatch && lhsContracting == o.lhsContracting && rhsBatch == o.rhsBatch &&
           rhsContracting == o.rhsContracting;
  }
};

// pad: padding=low_high[_interior]x... per dimension.
struct PaddingDim {
  int64_t low = 0, high = 0, interior = 0;
  bool operator==(const PaddingDim& o) const {
    return low == o.low && high == o.high && interior == o.interior;
  }
};

// reduce-window / select-and-scatter / convolution:
// window={size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=1x1 rhs_dilate=1x1 rhs_reversal=0x0}
struct WindowDim {
  int64_t size = 1, stride = 1, padLow = 0, padHigh = 0, baseDilation = 1, windowDilation = 1;
  bool reversal = false;
  bool operator==(const WindowDim& o) const {
    return size == o.size && stride == o.stride && padLow == o.padLow && padHigh == o.padHigh &&
           baseDilation == o.baseDilation && windowDilation == o.windowDilation &&
           reversal == o.reversal;
  }
};

// replica_groups: either the list form {{0,1},{2,3}} or the iota form
// [2,4]<=[8] / [2,4]<=[4,2]T(1,0) (a reshape of iota, optionally transposed).
struct ReplicaGroups {
  bool iotaForm = false;
  std::vector<std::vector<int64_t>> groups;  // list form
  std::vector<int64_t> iotaGroupShape;       // iota form: [num_groups, group_size]
  std::vector<int64_t> iotaReshape;          // iota form: dims after <=
  std::vector<int64_t> iotaTranspose;        // iota form: T(...) permutation, may be empty
  // The groups as lists of ids, whatever the form (empty if the iota form is
  // malformed or larger than 1<<20 ids).
  std::vector<std::vector<int64_t>> expand() const;
  bool operator==(const ReplicaGroups& o) const {
    return iotaForm == o.iotaForm && groups == o.groups && iotaGroupShape == o.iotaGroupShape &&
           iotaReshape == o.iotaReshape && iotaTranspose == o.iotaTranspose;
  }
};

// metadata={op_type="..." op_name="..." source_file="..." source_line=8 ...}.
// Strings are kept escaped, as written. Fields we do not model stay in `other`
// as (key, verbatim value) pairs, in order.
struct OpMetadata {
  std::string opType, opName, sourceFile;
  std::optional<int64_t> sourceLine;
  std::vector<std::pair<std::string, std::string>> other;
  bool empty() const {
    return opType.empty() && opName.empty() && sourceFile.empty() && !sourceLine && other.empty();
  }
  bool operator==(const OpMetadata& o) const {
    return opType == o.opType && opName == o.opName && sourceFile == o.sourceFile &&
           sourceLine == o.sourceLine && other == o.other;
  }
};

// backend_config in its three spellings: a quoted string (JSON or escaped
// bytes; `text` is the content between the quotes, escapes as written), or an
// unquoted brace blob (`text` is the whole "{...}" verbatim).
struct BackendConfig {
  enum class Kind { String, Braced } kind = Kind::String;
  std::string text;
  bool operator==(const BackendConfig& o) const { return kind == o.kind && text == o.text; }
};

// A reference to called computations: to_apply=%f, calls=%g, condition=, body=,
// branch_computations={%a, %b}, true_computation=, false_computation=, select=,
// scatter=, called_computations={...}. `braced` records the {..} list form.
struct CalledComputations {
  std::string key;
  std::vector<HloComputation*> computations;
  bool braced = false;
};

// The value of an attribute without a dedicated field. Known simple keys are
// typed (e.g. index: Int, slice_sizes: IntList, use_global_device_ids: Bool,
// epsilon: Float, kind: Ident); unknown keys are Raw: the value's text
// verbatim, printed back unchanged.
struct AttrValue {
  enum class Kind { Int, IntList, IntListList, Bool, Float, Ident, String, Raw } kind = Kind::Raw;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::vector<int64_t> list;
  std::vector<std::vector<int64_t>> lists;
  std::string s;  // Ident / Raw text, or String content (escaped, without quotes)
  bool operator==(const AttrValue& o) const;
  std::string toString() const;  // as printed after "key="
};

struct NamedAttr {
  std::string key;
  AttrValue value;
  bool operator==(const NamedAttr& o) const { return key == o.key && value == o.value; }
};

// The kind a known generic key is parsed as; Raw for an unknown key.
AttrValue::Kind genericAttrKind(const std::string& key);

// Decodes C-style escapes of an HLO string ("\n", "\"", "\\", octal "\000", hex "\x9C"/"\9C").
std::string unescapeHloString(const std::string& escaped);

}  // namespace tpusim::hlo
