#pragma once
// A family's checkpoint, each tensor declared once: its name, its shape, and what it
// becomes on the GPU (a buffer in the model's precision or in fp32, a Linear with or
// without a bias, rows transposed or stacked with other tensors', a LayerNorm or an
// RMSNorm). load() then checks the whole declaration against the file (every tensor
// present with its shape, nothing else there) before anything is uploaded, uploads each
// into the model's weights, and runs the steps that follow (tied weights, computed
// tables). Errors name the model and the tensor.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "expected_tensors.hpp"
#include "safetensors.hpp"
#include "weights.hpp"

namespace vkf::model {

class Checkpoint {
 public:
  // The linear layers' weights in blocks (LoadOptions::weights and ::mix): one type for
  // all, or llama.cpp's mix of types by each weight's role and layer.
  struct Blocks {
    std::optional<BlockType> type;
    std::optional<BlockMix> mix;
  };
  Checkpoint(Context& ctx, const ModelFiles& files, const std::string& file, DType precision,
             const std::string& architecture, Blocks blocks = {});
  const ModelFiles& files() const { return files_; }
  const SafeTensors& file() const { return file_; }
  bool has(const std::string& name) const { return file_.tensors().count(name) > 0; }
  // Refuses a config asking for more layers under `prefix` than the file holds, before
  // anything is declared per layer (check_layer_count).
  void layers(const std::string& prefix, uint32_t count, const std::string& field);

  // `name` [shape], in the model's precision.
  void tensor(Buffer& to, const std::string& name, Shape shape);
  // Rows [row0, row0 + rows) of `name` [shape] in fp32 (positional tables).
  void fp32_rows(Buffer& to, const std::string& name, Shape shape, uint64_t row0, uint64_t rows);
  // prefix.weight [out, in] and prefix.bias [out].
  void linear(Linear& to, const std::string& prefix, uint32_t out, uint32_t in);
  // A weight [out, in] without a bias (the kernels add zeros).
  void linear_weight(Linear& to, const std::string& name, uint32_t out, uint32_t in);
  // Separate projections, each prefix.weight [out_i, in] (and prefix.bias [out_i] with
  // biases), as one Linear of their rows one after another (q, k, v; gate, up).
  struct Part {
    std::string prefix;
    uint32_t out;
  };
  void stacked(Linear& to, const std::vector<Part>& parts, uint32_t in, bool biases);
  // A Conv1D (GPT-2): prefix.weight [in, out] transposed to Linear's [out, in], prefix.bias [out].
  void conv1d(Linear& to, const std::string& prefix, uint32_t in, uint32_t out);
  // nn.MultiheadAttention's prefix.in_proj_weight [3d, d] and in_proj_bias [3d]: rows
  // [0, 3d) into one projection, or [0, d) into `q` and [d, 3d) into `kv` (cross-attention).
  void in_proj(Linear& qkv, const std::string& prefix, uint32_t d);
  void in_proj(Linear& q, Linear& kv, const std::string& prefix, uint32_t d);
  // nn.TransformerEncoderLayer under `prefix`: self_attn (in_proj, out_proj), linear1,
  // linear2, norm1, norm2.
  void encoder_layer(EncoderLayer& to, const std::string& prefix, uint32_t d, uint32_t ffn);
  // prefix.weight and prefix.bias [d].
  void norm(Norm& to, const std::string& prefix, uint32_t d);
  // An RMSNorm's `name` [d]; its beta is zeros (a GEMM that folds it adds one as a LayerNorm's).
  void rms_norm(Norm& to, const std::string& name, uint32_t d);
  // A tensor older saves carry that nothing reads (attention-mask buffers, rotary
  // frequencies recomputed from config.json): allowed where present, whatever its shape.
  void unread(const std::string& name);
  // A tensor that must be there with this shape, though nothing reads it (a tied
  // embedding's copy, positions computed from the config instead).
  void unread(const std::string& name, Shape shape) { expect(name, std::move(shape)); }
  // A token embedding `name` [vocab, dim]: in blocks where the linear layers' weights are
  // and its rows are whole blocks (its lookup dequantizes the rows it reads), else in the
  // model's precision.
  void embedding(Buffer& to, std::optional<BlockType>& blocks, const std::string& name, uint32_t vocab, uint32_t dim);
  // An output projection tied to the token embedding `table` (declared by embedding()
  // as `name` [out, in]): the same buffer and storage, with a bias of zeros.
  void tied_head(Linear& to, const Buffer& table, const std::optional<BlockType>& table_blocks, uint32_t out,
                 uint32_t in);
  // Run after every upload: weights shared between places, tables computed from the config.
  void then(std::function<void()> step) { after_.push_back(std::move(step)); }

  // Checks the file against what was declared, then reads, converts and uploads each
  // tensor, calling progress(done, total) after each (when given).
  void load(const std::function<void(size_t, size_t)>& progress = {});

  // After load(): the largest weight in blocks (rows x K values, 0: none), each storage's
  // weight bytes, and the weights left in the model's precision although blocks were asked.
  uint64_t largest_weight_in_blocks() const { return largest_; }
  const std::map<std::string, uint64_t>& weight_bytes() const { return weight_bytes_; }
  const std::vector<std::string>& weights_not_in_blocks() const { return not_in_blocks_; }

 private:
  Buffer upload(const std::string& name, std::vector<float> values, DType type) const;
  // A Linear's weight [rows, cols] from its values (the rows of the tensors `names`, one
  // after another): in blocks where asked and its rows are whole blocks, else in the
  // model's precision.
  void put_weight(Linear& to, const std::vector<std::string>& names, std::vector<float> values, uint32_t rows,
                  uint32_t cols);
  // The same from the file's tensors `names` [rows, cols] together: uploaded as they are
  // where the file holds them in blocks (a GGUF file), else put_weight(values()).
  void put_file_weight(Linear& to, const std::vector<std::string>& names, uint32_t rows, uint32_t cols,
                       const std::function<std::vector<float>()>& values);
  // The blocks a weight made of the tensors `names` is stored in (none: the precision).
  std::optional<BlockType> storage(const std::vector<std::string>& names, uint32_t cols) const;
  Buffer zeros(uint64_t n, const std::string& name) const;
  void expect(const std::string& name, Shape shape) { expected_.add(name, std::move(shape)); }

  Context& ctx_;
  const ModelFiles& files_;
  SafeTensors file_;
  DType precision_;
  std::string label_, architecture_;
  ExpectedTensors expected_;
  std::vector<std::function<void()>> uploads_, after_;
  Blocks blocks_;
  uint32_t layers_ = 1;  // the model's layers (a mix's rule counts them)
  bool tied_ = false;    // the token embedding is also the output projection
  uint64_t largest_ = 0;
  std::map<std::string, uint64_t> weight_bytes_;
  std::vector<std::string> not_in_blocks_;
};

}  // namespace vkf::model
