//===- Diagnostics.cpp - The kernel contract's diagnostics ----------------===//

#include "Frontend/Diagnostics.h"

#include "llvm/ADT/Twine.h"

using namespace pk::frontend;

void Reporter::error(llvm::StringRef Id, clang::SourceLocation Loc,
                     clang::SourceRange Range, llvm::StringRef Message,
                     llvm::StringRef Note, clang::SourceLocation NoteLoc,
                     std::optional<clang::FixItHint> Fix) {
  ++NumErrors;
  std::string Key = (Id + "\n" + Message).str();
  if (!Seen.insert({Loc.getRawEncoding(), Key}).second)
    return;
  unsigned ID = D.getCustomDiagID(clang::DiagnosticsEngine::Error, "%0 [%1]");
  {
    auto B = D.Report(Loc, ID);
    B << Message << Id;
    if (Range.isValid())
      B << clang::CharSourceRange::getTokenRange(Range);
  }
  if (!Note.empty())
    note(NoteLoc.isValid() ? NoteLoc : Loc, Note, std::move(Fix));
}

void Reporter::warning(llvm::StringRef Id, clang::SourceLocation Loc,
                       llvm::StringRef Message) {
  unsigned ID = D.getCustomDiagID(clang::DiagnosticsEngine::Warning, "%0 [%1]");
  D.Report(Loc, ID) << Message << Id;
}

void Reporter::note(clang::SourceLocation Loc, llvm::StringRef Message,
                    std::optional<clang::FixItHint> Fix) {
  unsigned ID = D.getCustomDiagID(clang::DiagnosticsEngine::Note, "%0");
  auto B = D.Report(Loc, ID);
  B << Message;
  if (Fix)
    B << *Fix;
}
