//===- tokenizer.h - llama2.c's BPE tokenizer and its tokenizer.bin -------===//
//
// Tokenizer reads llama2.c's tokenizer.bin (uint32 max_token_length, then
// per token: fp32 score, int32 length, the piece's bytes; as many tokens as
// the model's vocab_size, which the file does not store) and encodes and
// decodes as run.c does, token for token:
//
//   encode: BOS, a dummy " " when the text is not empty, each UTF-8
//           codepoint (up to 4 bytes) as its token or, when the vocabulary
//           lacks it, as its bytes (<0xXX> = id byte + 3), then merges of
//           the best-scoring adjacent pair (leftmost on ties) until no pair
//           is a token, then EOS.
//   decode: a token's piece, without its leading space right after BOS,
//           <0xXX> pieces as the raw byte.
//
// writeTokenizer and syntheticVocabulary make such files for tests and for
// random-weight checkpoints.
//
//===----------------------------------------------------------------------===//
#ifndef PK_SAMPLES_LLAMA_TOKENIZER_H
#define PK_SAMPLES_LLAMA_TOKENIZER_H

#include "checkpoint.h" // FileError

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace llama {

class Tokenizer {
public:
  /// sentencepiece's fixed ids, which run.c assumes.
  static constexpr int32_t Unk = 0;
  static constexpr int32_t Bos = 1;
  static constexpr int32_t Eos = 2;
  /// Byte b's token is FirstByteToken + b (the pieces <0x00>..<0xFF>).
  static constexpr int32_t FirstByteToken = 3;

  /// Reads the first `VocabSize` tokens of the tokenizer.bin at `Path`.
  /// Throws FileError (naming the file) when it is missing, truncated, has
  /// bytes after the last token, a piece that is empty or longer than the
  /// header's max_token_length, or when VocabSize < 3.
  Tokenizer(const std::string &Path, int64_t VocabSize);

  int64_t vocabSize() const { return static_cast<int64_t>(Pieces.size()); }
  int64_t maxTokenLength() const { return MaxTokenLength; }
  /// Token `Id`'s bytes and merge score. Throw std::out_of_range for an id
  /// outside [0, vocabSize()).
  const std::string &piece(int32_t Id) const;
  float score(int32_t Id) const;
  /// The id of the token whose piece is `Piece`, or -1. Among equal pieces
  /// (a vocabulary should have none) the lowest id.
  int32_t lookup(std::string_view Piece) const;

  /// run.c's encode (see the file comment). Differences, on vocabularies
  /// run.c cannot handle: without the 256 byte tokens at ids 3..258, bytes
  /// fall back to Unk instead of to ids that may not exist; without a " "
  /// token, the dummy prefix falls back like a ' ' byte instead of being -1.
  /// The text is bytes: a NUL is a byte like any other (run.c stops there).
  std::vector<int32_t> encode(std::string_view Text, bool WithBos,
                              bool WithEos) const;

  /// run.c's decode: the bytes to print for `Token` after `PrevToken`,
  /// valid as long as the tokenizer. A piece is a raw byte when it is
  /// exactly "<0x" two hex digits ">" (run.c's sscanf also accepts one
  /// digit or no '>'; no such piece exists in Llama 2's vocabulary). Throws
  /// std::out_of_range for a Token outside [0, vocabSize()).
  std::string_view decode(int32_t PrevToken, int32_t Token) const;

private:
  int32_t byteToken(unsigned char Byte) const;

  std::vector<std::string> Pieces;
  std::vector<float> Scores;
  /// The ids sorted by piece (then id), for lookup. Ids, not views of the
  /// pieces, so that a copied tokenizer does not point into the original.
  std::vector<int32_t> Sorted;
  int64_t MaxTokenLength = 0;
  bool HasByteTokens = false;
  int32_t SpaceToken = -1;
};

/// What run.c's safe_printf prints of `Piece`: the piece up to its first
/// NUL, or nothing when that is empty or a single byte that is neither
/// printable ASCII nor whitespace (control codes, raw bytes of a split
/// UTF-8 character).
std::string_view safePiece(std::string_view Piece);

/// Writes safePiece(Piece) to `Out`.
void printSafePiece(std::FILE *Out, std::string_view Piece);

/// Writes a tokenizer.bin of `Pieces` with `Scores` (as many), its
/// max_token_length the longest piece's length (as tokenizer.py does).
/// Throws FileError when it cannot be written or a piece is empty, and
/// std::invalid_argument when the sizes differ.
void writeTokenizer(const std::string &Path,
                    std::span<const std::string> Pieces,
                    std::span<const float> Scores);

/// A vocabulary laid out like Llama 2's, for random-weight models.
struct Vocabulary {
  std::vector<std::string> pieces;
  std::vector<float> scores;
};

/// A deterministic vocabulary of `VocabSize` (>= 260) tokens, in Llama 2's
/// layout: <unk>, "\n<s>\n", "\n</s>\n", the byte tokens <0x00>..<0xFF>,
/// then merges scored -1, -2, ... by rank (" t"-style space-prefixed
/// letters, frequent English bigrams and words, then all letter pairs,
/// triples, ... with and without a leading space), and last the single
/// characters " " (scored -1e9, as in Llama 2) and as many printable ASCII
/// characters as fit, most frequent first. Throws std::invalid_argument for
/// VocabSize < 260.
Vocabulary syntheticVocabulary(int64_t VocabSize);

} // namespace llama

#endif // PK_SAMPLES_LLAMA_TOKENIZER_H
