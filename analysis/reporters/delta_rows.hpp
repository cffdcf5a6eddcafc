#pragma once
// run.trainsim's rows (flows since format version 8, task records since
// version 9) coded each against the row before it (the first against a row
// of zeros). A row is integer fields, doubles that may repeat (a flow's
// bytes) and a start and an end time. Its code: one byte of flags, bit i
// (i < kExtras) when extra double i repeats, then kStartSame / kStartAtEnd
// when the start equals the previous row's start / end and kEndSame when
// the end repeats, the bits above them a small tag of the caller's (a
// record's stream); then the integer fields as zigzag varints of their
// differences (mod 2^64; a signed field sign-extended by the caller), then
// the doubles not repeated, bit-exact (repeating means equal bits).
//
// What this buys: a ring's flows differ from the step before in their GPUs
// and route by one or two and share their bytes and often their times, and
// a class's records come GPU after GPU at one time (scale-16k: 99.7% repeat
// both times): ~12 bytes a flow against 48, ~5 a record against 29, and
// zstd reads 4-6x fewer bytes (docs/performance.md, "Writers: numbers
// formatted once, flows coded as differences" and "The archive's records
// coded as differences").
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace trainsim::analysis {

template <std::size_t kInts, std::size_t kExtras>
class DeltaRows {
 public:
  struct Row {
    std::array<std::uint64_t, kInts> ints{};
    std::array<std::uint64_t, kExtras> extras{};  // doubles' bits
    std::uint64_t start = 0, end = 0;             // bits
  };
  static constexpr unsigned kStartSame = 1u << kExtras, kStartAtEnd = 2u << kExtras, kEndSame = 4u << kExtras;
  static constexpr unsigned kTagShift = kExtras + 3;
  static constexpr std::size_t kMinBytes = 1 + kInts;  // flags and one-byte varints
  static constexpr std::size_t kMaxBytes = 1 + kInts * 10 + (kExtras + 2) * 8;

  // Writes the row's code at `out`, which has room for kMaxBytes; returns
  // its end (no capacity checks per byte: millions of rows). `tag` must fit
  // in the flags' bits above kTagShift.
  char* put(char* out, const Row& row, unsigned tag = 0) {
    unsigned flags = tag << kTagShift;
    for (std::size_t i = 0; i < kExtras; ++i)
      flags |= row.extras[i] == last_.extras[i] ? 1u << i : 0u;
    if (row.start == last_.start)
      flags |= kStartSame;
    else if (row.start == last_.end)
      flags |= kStartAtEnd;
    if (row.end == last_.end)
      flags |= kEndSame;
    *out++ = static_cast<char>(flags);
    // Most rows' differences are all one-byte varints (|d| < 64): written
    // without a branch per field.
    std::uint64_t z[kInts], any = 0;
    for (std::size_t i = 0; i < kInts; ++i) {
      z[i] = zigzag(row.ints[i] - last_.ints[i]);
      any |= z[i];
    }
    if (any < 0x80) {
      for (std::size_t i = 0; i < kInts; ++i)
        out[i] = static_cast<char>(z[i]);
      out += kInts;
    } else {
      for (std::size_t i = 0; i < kInts; ++i)
        out = put_varint(out, z[i]);
    }
    for (std::size_t i = 0; i < kExtras; ++i)
      if (!(flags & (1u << i)))
        out = put_bits(out, row.extras[i]);
    if (!(flags & (kStartSame | kStartAtEnd)))
      out = put_bits(out, row.start);
    if (!(flags & kEndSame))
      out = put_bits(out, row.end);
    last_ = row;
    return out;
  }

  // The next row from `in` (its `get<T>()` reads a T, checking the bytes
  // left); returns the flags' tag. `check(ok, what)` refuses flags with both
  // start bits and varints over 64 bits; the fields are the caller's to check.
  template <class In, class Check>
  unsigned get(In& in, Row& row, Check&& check) {
    const unsigned flags = in.template get<std::uint8_t>();
    check((flags & (kStartSame | kStartAtEnd)) != (kStartSame | kStartAtEnd), "row flags");
    for (std::size_t i = 0; i < kInts; ++i)
      last_.ints[i] += unzigzag(get_varint(in, check));
    for (std::size_t i = 0; i < kExtras; ++i)
      if (!(flags & (1u << i)))
        last_.extras[i] = in.template get<std::uint64_t>();
    const std::uint64_t end_was = last_.end;
    if (flags & kStartAtEnd)
      last_.start = end_was;
    else if (!(flags & kStartSame))
      last_.start = in.template get<std::uint64_t>();
    if (!(flags & kEndSame))
      last_.end = in.template get<std::uint64_t>();
    row = last_;
    return flags >> kTagShift;
  }

 private:
  static std::uint64_t zigzag(std::uint64_t d) { return (d << 1) ^ (0 - (d >> 63)); }
  static std::uint64_t unzigzag(std::uint64_t z) { return (z >> 1) ^ (0 - (z & 1)); }
  static char* put_varint(char* out, std::uint64_t v) {
    for (; v >= 0x80; v >>= 7)
      *out++ = static_cast<char>((v & 0x7f) | 0x80);
    *out++ = static_cast<char>(v);
    return out;
  }
  template <class In, class Check>
  static std::uint64_t get_varint(In& in, Check& check) {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const auto byte = in.template get<std::uint8_t>();
      check(shift < 63 || byte <= 1, "row varint over 64 bits");
      v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return v;
    }
    check(false, "row varint over 64 bits");
    return 0;
  }
  static char* put_bits(char* out, std::uint64_t v) {
    std::memcpy(out, &v, sizeof v);
    return out + sizeof v;
  }

  Row last_{};
};

}  // namespace trainsim::analysis
