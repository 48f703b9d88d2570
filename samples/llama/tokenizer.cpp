//===- tokenizer.cpp - llama2.c's BPE tokenizer and its tokenizer.bin -----===//

#include "tokenizer.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <unordered_set>

namespace llama {
namespace {

[[noreturn]] void fail(const std::string &Path, const std::string &Why) {
  throw FileError(Path + ": " + Why);
}

/// The whole file at `Path` (a tokenizer.bin is well under a megabyte).
std::string readFile(const std::string &Path) {
  std::FILE *F = std::fopen(Path.c_str(), "rb");
  if (!F)
    fail(Path, std::string("cannot open: ") + std::strerror(errno));
  std::string Data;
  char Buf[1 << 16];
  size_t N;
  while ((N = std::fread(Buf, 1, sizeof(Buf), F)) > 0)
    Data.append(Buf, N);
  const bool Failed = std::ferror(F);
  const int Err = errno;
  std::fclose(F);
  if (Failed)
    fail(Path, std::string("cannot read: ") + std::strerror(Err));
  return Data;
}

/// "<0x%02X>" of `Byte`, the piece of a byte token.
std::string bytePiece(unsigned Byte) {
  static const char Hex[] = "0123456789ABCDEF";
  return std::string("<0x") + Hex[Byte >> 4] + Hex[Byte & 15] + ">";
}

int hexValue(char C) {
  if (C >= '0' && C <= '9')
    return C - '0';
  if (C >= 'A' && C <= 'F')
    return C - 'A' + 10;
  if (C >= 'a' && C <= 'f')
    return C - 'a' + 10;
  return -1;
}

/// The byte a "<0xXX>" piece stands for, or -1.
int parseBytePiece(std::string_view Piece) {
  if (Piece.size() != 6 || !Piece.starts_with("<0x") || Piece[5] != '>')
    return -1;
  const int Hi = hexValue(Piece[3]), Lo = hexValue(Piece[4]);
  return Hi < 0 || Lo < 0 ? -1 : Hi * 16 + Lo;
}

/// Each byte as a one-byte string, for decode's raw bytes.
constexpr auto ByteTable = [] {
  std::array<char, 256> T{};
  for (int I = 0; I < 256; ++I)
    T[static_cast<size_t>(I)] = static_cast<char>(I);
  return T;
}();

bool isUtf8Continuation(char C) {
  return (static_cast<unsigned char>(C) & 0xC0) == 0x80;
}

} // namespace

//===----------------------------------------------------------------------===//
// Tokenizer
//===----------------------------------------------------------------------===//

Tokenizer::Tokenizer(const std::string &Path, int64_t VocabSize) {
  if (VocabSize < 3)
    fail(Path, "the model's vocab_size is " + std::to_string(VocabSize) +
                   "; a tokenizer needs at least <unk>, <s> and </s>");
  const std::string Data = readFile(Path);
  const auto FileBytes = static_cast<int64_t>(Data.size());
  int64_t At = 0;
  auto Truncated = [&](const std::string &Where) {
    fail(Path, "truncated: the file ends (at byte " +
                   std::to_string(FileBytes) + ") inside " + Where +
                   ", the model's vocab_size being " +
                   std::to_string(VocabSize));
  };
  auto ReadInt32 = [&](const std::string &Where) {
    if (FileBytes - At < 4)
      Truncated(Where);
    int32_t V;
    std::memcpy(&V, Data.data() + At, 4);
    At += 4;
    return V;
  };

  uint32_t MaxLength;
  {
    const int32_t Raw = ReadInt32("the header (max_token_length)");
    std::memcpy(&MaxLength, &Raw, 4);
  }
  MaxTokenLength = MaxLength;
  if (MaxTokenLength == 0)
    fail(Path, "max_token_length is 0 (pieces are at least 1 byte long)");

  Pieces.reserve(static_cast<size_t>(std::min<int64_t>(VocabSize, 1 << 20)));
  Scores.reserve(Pieces.capacity());
  for (int64_t Id = 0; Id < VocabSize; ++Id) {
    const std::string Where = "token " + std::to_string(Id);
    float Score;
    const int32_t RawScore = ReadInt32(Where);
    std::memcpy(&Score, &RawScore, 4);
    const int32_t Length = ReadInt32(Where);
    if (Length <= 0 || Length > MaxTokenLength)
      fail(Path, Where + " has length " + std::to_string(Length) +
                     " (it must be in [1, max_token_length = " +
                     std::to_string(MaxTokenLength) + "])");
    if (FileBytes - At < Length)
      Truncated(Where);
    Pieces.emplace_back(Data.data() + At, static_cast<size_t>(Length));
    Scores.push_back(Score);
    At += Length;
  }
  if (At != FileBytes)
    fail(Path, std::to_string(FileBytes - At) + " trailing bytes after the " +
                   std::to_string(VocabSize) +
                   " tokens of the model's vocab_size (a tokenizer for "
                   "another vocabulary?)");

  Sorted.resize(Pieces.size());
  for (size_t Id = 0; Id < Pieces.size(); ++Id)
    Sorted[Id] = static_cast<int32_t>(Id);
  // std::string compares bytes as unsigned char, like run.c's strcmp.
  std::sort(Sorted.begin(), Sorted.end(), [&](int32_t A, int32_t B) {
    const std::string &PA = Pieces[static_cast<size_t>(A)];
    const std::string &PB = Pieces[static_cast<size_t>(B)];
    return PA != PB ? PA < PB : A < B;
  });

  HasByteTokens = VocabSize >= FirstByteToken + 256;
  for (unsigned B = 0; HasByteTokens && B < 256; ++B)
    HasByteTokens = Pieces[FirstByteToken + B] == bytePiece(B);
  SpaceToken = lookup(" ");
}

const std::string &Tokenizer::piece(int32_t Id) const {
  if (Id < 0 || Id >= vocabSize())
    throw std::out_of_range("llama::Tokenizer: token " + std::to_string(Id) +
                            " is outside the vocabulary of " +
                            std::to_string(vocabSize()));
  return Pieces[static_cast<size_t>(Id)];
}

float Tokenizer::score(int32_t Id) const {
  piece(Id); // range check
  return Scores[static_cast<size_t>(Id)];
}

int32_t Tokenizer::lookup(std::string_view Piece) const {
  const auto It = std::lower_bound(
      Sorted.begin(), Sorted.end(), Piece, [&](int32_t Id, std::string_view P) {
        return std::string_view(Pieces[static_cast<size_t>(Id)]) < P;
      });
  return It != Sorted.end() && Pieces[static_cast<size_t>(*It)] == Piece ? *It
                                                                         : -1;
}

int32_t Tokenizer::byteToken(unsigned char Byte) const {
  return HasByteTokens ? FirstByteToken + Byte : Unk;
}

std::vector<int32_t> Tokenizer::encode(std::string_view Text, bool WithBos,
                                       bool WithEos) const {
  std::vector<int32_t> Ids;
  Ids.reserve(Text.size() + 3);
  if (WithBos)
    Ids.push_back(Bos);
  // sentencepiece's add_dummy_prefix, as run.c approximates it.
  if (!Text.empty())
    Ids.push_back(SpaceToken >= 0 ? SpaceToken : byteToken(' '));

  // Codepoints: a byte and the continuation bytes after it, at most 4 bytes
  // (stray continuation bytes group the same way, as in run.c).
  for (size_t I = 0; I < Text.size();) {
    size_t End = I + 1;
    while (End < Text.size() && End - I < 4 && isUtf8Continuation(Text[End]))
      ++End;
    const std::string_view Codepoint = Text.substr(I, End - I);
    if (const int32_t Id = lookup(Codepoint); Id >= 0) {
      Ids.push_back(Id);
    } else {
      for (char C : Codepoint)
        Ids.push_back(byteToken(static_cast<unsigned char>(C)));
    }
    I = End;
  }

  // Merges. PairIds[i] is the token of Ids[i] + Ids[i+1], or -1; only the
  // two pairs around a merge change, so each round is a scan of PairIds
  // (run.c looks every pair up again each round; the choice is the same).
  auto PairId = [&](size_t I) {
    return lookup(Pieces[static_cast<size_t>(Ids[I])] +
                  Pieces[static_cast<size_t>(Ids[I + 1])]);
  };
  std::vector<int32_t> PairIds;
  for (size_t I = 0; I + 1 < Ids.size(); ++I)
    PairIds.push_back(PairId(I));
  while (true) {
    float BestScore = -1e10f; // run.c's floor: lower-scored pairs never merge
    size_t Best = SIZE_MAX;
    for (size_t I = 0; I < PairIds.size(); ++I) {
      if (PairIds[I] >= 0 &&
          Scores[static_cast<size_t>(PairIds[I])] > BestScore) {
        BestScore = Scores[static_cast<size_t>(PairIds[I])];
        Best = I;
      }
    }
    if (Best == SIZE_MAX)
      break;
    Ids[Best] = PairIds[Best];
    Ids.erase(Ids.begin() + static_cast<std::ptrdiff_t>(Best) + 1);
    PairIds.erase(PairIds.begin() + static_cast<std::ptrdiff_t>(Best));
    if (Best > 0)
      PairIds[Best - 1] = PairId(Best - 1);
    if (Best + 1 < Ids.size())
      PairIds[Best] = PairId(Best);
  }

  if (WithEos)
    Ids.push_back(Eos);
  return Ids;
}

std::string_view Tokenizer::decode(int32_t PrevToken, int32_t Token) const {
  std::string_view Piece = piece(Token);
  // sentencepiece strips the leading space of the first piece after BOS.
  if (PrevToken == Bos && Piece.starts_with(' '))
    Piece.remove_prefix(1);
  if (const int Byte = parseBytePiece(Piece); Byte >= 0)
    return {&ByteTable[static_cast<size_t>(Byte)], 1};
  return Piece;
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

std::string_view safePiece(std::string_view Piece) {
  Piece = Piece.substr(0, Piece.find('\0')); // what printf("%s") would print
  if (Piece.size() == 1) {
    const auto B = static_cast<unsigned char>(Piece[0]);
    // isprint || isspace in the C locale, which run.c runs in.
    const bool Printable = B >= 0x20 && B <= 0x7E;
    const bool Space = B == ' ' || (B >= '\t' && B <= '\r');
    if (!Printable && !Space)
      return {};
  }
  return Piece;
}

void printSafePiece(std::FILE *Out, std::string_view Piece) {
  const std::string_view Safe = safePiece(Piece);
  if (!Safe.empty()) // fwrite's pointer must not be null, even for 0 bytes
    std::fwrite(Safe.data(), 1, Safe.size(), Out);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

void writeTokenizer(const std::string &Path,
                    std::span<const std::string> Pieces,
                    std::span<const float> Scores) {
  if (Pieces.size() != Scores.size())
    throw std::invalid_argument(
        "llama::writeTokenizer: " + std::to_string(Pieces.size()) +
        " pieces but " + std::to_string(Scores.size()) + " scores");
  uint32_t MaxLength = 0;
  for (size_t Id = 0; Id < Pieces.size(); ++Id) {
    if (Pieces[Id].empty() || Pieces[Id].size() > INT32_MAX)
      fail(Path, "cannot write token " + std::to_string(Id) + " of length " +
                     std::to_string(Pieces[Id].size()));
    MaxLength = std::max(MaxLength, static_cast<uint32_t>(Pieces[Id].size()));
  }

  std::string Data;
  auto Append = [&](const void *P, size_t N) {
    Data.append(static_cast<const char *>(P), N);
  };
  Append(&MaxLength, 4);
  for (size_t Id = 0; Id < Pieces.size(); ++Id) {
    const auto Length = static_cast<int32_t>(Pieces[Id].size());
    Append(&Scores[Id], 4);
    Append(&Length, 4);
    Data += Pieces[Id];
  }

  std::FILE *F = std::fopen(Path.c_str(), "wb");
  if (!F)
    fail(Path, std::string("cannot create: ") + std::strerror(errno));
  const bool Written =
      std::fwrite(Data.data(), 1, Data.size(), F) == Data.size();
  const int Err = errno;
  if (std::fclose(F) != 0 || !Written)
    fail(Path,
         std::string("cannot write: ") + std::strerror(Written ? errno : Err));
}

//===----------------------------------------------------------------------===//
// A synthetic vocabulary
//===----------------------------------------------------------------------===//

namespace {

/// Lowercase letters, most frequent in English first.
constexpr std::string_view Letters = "etaoinshrdlcumwfgypbvkjxqz";

/// Single characters by rough frequency in English text (space first).
constexpr std::string_view Singles =
    " etaoinshrdlcumwfgypbvkjxqz.,\"'TSAHIWOBMFCLDPNEGRYUVJKQXZ0123456789"
    "!?-:;()[]{}<>/\\|@#$%^&*_+=~`";
static_assert(Singles.size() == 95, "space and the 94 printable characters");

/// Frequent English bigrams and (space-prefixed) words, and the pieces
/// that make the words reachable by pairwise merges.
constexpr std::string_view CommonMerges[] = {
    "th",      "he",      "in",    "er",     "an",    "re",     "on",
    "at",      "en",      "nd",    "ti",     "es",    "or",     "te",
    "of",      "ed",      "is",    "it",     "al",    "ar",     "st",
    "to",      "nt",      "ng",    "se",     "ha",    "as",     "ou",
    "io",      "le",      "ve",    "co",     "me",    "de",     "hi",
    "ri",      "ro",      "ic",    "ne",     "ea",    "ra",     "ce",
    "li",      "ch",      "ll",    "be",     "ma",    "si",     "om",
    "ur",      " the",    " th",   " an",    " and",  " to",    " of",
    " in",     " wa",     " was",  " he",    " it",   " sh",    " she",
    " hi",     " his",    " her",  " wi",    " with", " th",    " they",
    " fo",     " for",    " on",   " yo",    " you",  " sa",    " said",
    " ha",     " had",    " bu",   " but",   " da",   " day",   " ti",
    " time",   " up",     " upon", " once",  " ther", " there", " li",
    " lit",    " little", " gi",   " girl",  " bo",   " boy",   " hap",
    " happy",  " bi",     " big",  " saw",   " pl",   " play",  " fr",
    " friend", " mo",     " mom",  " we",    " went", " want",  " wanted",
    " one",    " very",   " na",   " named", "ing",   "ly",     " is",
    " at",     " so",     " not",  " all",   " what", " were",  " this",
    " be",     " Th",     " The",  " On",    " Once", " Li",    " Lily",
    " Ti",     " Tim",    " Be",   " Ben",
};

} // namespace

Vocabulary syntheticVocabulary(int64_t VocabSize) {
  constexpr int64_t Fixed = Tokenizer::FirstByteToken + 256;
  if (VocabSize < Fixed + 1)
    throw std::invalid_argument("llama::syntheticVocabulary: vocab_size " +
                                std::to_string(VocabSize) +
                                " is too small: it needs <unk>, <s>, </s>, 256 "
                                "byte tokens and \" \" (" +
                                std::to_string(Fixed + 1) + ")");
  Vocabulary V;
  V.pieces = {"<unk>", "\n<s>\n", "\n</s>\n"};
  for (unsigned B = 0; B < 256; ++B)
    V.pieces.push_back(bytePiece(B));

  const int64_t NumSingles = std::min<int64_t>(
      static_cast<int64_t>(Singles.size()), VocabSize - Fixed);
  const int64_t NumMerges = VocabSize - Fixed - NumSingles;
  std::unordered_set<std::string> Seen;
  std::vector<std::string> Merges;
  auto Add = [&](std::string Piece) {
    if (static_cast<int64_t>(Merges.size()) < NumMerges && Piece.size() > 1 &&
        Seen.insert(Piece).second)
      Merges.push_back(std::move(Piece));
  };
  for (char L : Letters)
    Add(std::string(" ") + L);
  for (std::string_view M : CommonMerges)
    Add(std::string(M));
  for (char L : Singles.substr(Singles.find('T'), 26)) // capitals
    Add(std::string(" ") + L);
  for (char D : std::string_view("0123456789"))
    Add(std::string(" ") + D);
  // Then every string of N letters, N = 2, 3, ..., without and with a
  // leading space, in the order of Letters, until the vocabulary is full.
  for (size_t N = 2; static_cast<int64_t>(Merges.size()) < NumMerges; ++N) {
    for (int Space = 0; Space < 2; ++Space) {
      std::vector<size_t> Digits(N, 0);
      while (static_cast<int64_t>(Merges.size()) < NumMerges) {
        std::string Piece = Space ? " " : "";
        for (size_t D : Digits)
          Piece += Letters[D];
        Add(std::move(Piece));
        size_t K = N;
        while (K > 0 && ++Digits[K - 1] == Letters.size())
          Digits[--K] = 0;
        if (K == 0)
          break;
      }
    }
  }

  for (std::string &M : Merges)
    V.pieces.push_back(std::move(M));
  for (int64_t I = 0; I < NumSingles; ++I)
    V.pieces.emplace_back(1, Singles[static_cast<size_t>(I)]);

  // Llama 2's scores: 0 for the fixed tokens, then minus the rank.
  V.scores.assign(V.pieces.size(), 0.0f);
  for (size_t Id = Fixed; Id < V.pieces.size(); ++Id)
    V.scores[Id] =
        V.pieces[Id] == " " ? -1e9f : -static_cast<float>(Id - Fixed + 1);
  return V;
}

} // namespace llama
