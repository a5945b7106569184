#!/usr/bin/env python3
# Writes test/fixtures/porter-1980-nltk.tsv: every word of test/fixtures/porter-words.txt (plus a few
# non-ASCII, emoji and short words) with its stem by NLTK's PorterStemmer in ORIGINAL_ALGORITHM mode,
# an independent implementation of Porter's 1980 paper. test/shared/porter.test.ts checks
# src/shared/porter.ts against every line. It also re-implements SPEC §1.3's description
# normalisation on top of NLTK and checks test/fixtures/descriptions.json against it.
# Developer tool only (not run by the tests or CI):
#   apt-get install python3-nltk && /usr/bin/python3 scripts/porter-reference-nltk.py
import json
import re
from pathlib import Path

from nltk.stem.porter import PorterStemmer

root = Path(__file__).resolve().parent.parent
stemmer = PorterStemmer(mode=PorterStemmer.ORIGINAL_ALGORITHM)
words = [w for w in (root / "test/fixtures/porter-words.txt").read_text(encoding="utf-8").split("\n") if w]
# Code points beyond ASCII are consonants to the algorithm; short words are stemmed as published.
extra = ["café", "cafés", "naïvely", "résumés", "façades", "jalapeños", "über", "straẞe", "xa🚀e",
         "ka😀😀ing", "🚀ies", "😀😀", "is", "as", "s", "ss", "sss", "ies", "sses", "ye"]
lines = [f"{w}\t{stemmer.stem(w, to_lowercase=False)}" for w in words + extra]
(root / "test/fixtures/porter-1980-nltk.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
print(f"porter-1980-nltk.tsv: {len(lines)} words")

# SPEC §1.3, step by step, independently of src/shared/description.ts.
STOPWORDS = set("""a about above after again against all am an and any are aren as at be because been before being below between both but by can cannot could couldn did didn do does doesn doing don down during each few for from further had hadn has hasn have haven having he her here hers herself him himself his how i if in into is isn it its itself let me more most mustn my myself no nor not of off on once only or other ought our ours ourselves out over own same shan she should shouldn so some such than that the their theirs them themselves then there these they this those through to too under until up very was wasn we were weren what when where which while who whom why with won would wouldn you your yours yourself yourselves use used uses using via without will may might must shall""".split())
SEPARATORS = re.compile(r"[ \t\n\v\f\r!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]+")


def normalise(text: str) -> str:
    lowered = "".join(c.lower() if "A" <= c <= "Z" else c for c in text)
    tokens = [t for t in SEPARATORS.split(lowered) if len(t) >= 2 and t not in STOPWORDS]
    stems = [t if len(t) < 4 else stemmer.stem(t, to_lowercase=False) for t in tokens]
    return " ".join(sorted(s for s in stems if s not in STOPWORDS))  # Python sorts by code point


cases = json.loads((root / "test/fixtures/descriptions.json").read_text(encoding="utf-8"))["cases"]
differences = [c["name"] for c in cases if normalise(c["text"]) != c["normalised"]]
print(f"descriptions.json: {len(cases)} cases, {len(differences)} differ from the NLTK-based normalisation {differences}")
raise SystemExit(1 if differences else 0)
