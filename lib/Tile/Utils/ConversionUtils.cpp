//===- ConversionUtils.cpp - element type conversions ---------------------===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/Utils/ConversionUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"

#include <optional>

using namespace mlir;
using namespace mlir::tile;

/// `elem` in the shape of `like` (a vector type or a scalar).
static Type shaped(Type like, Type elem) {
  if (auto vt = dyn_cast<VectorType>(like))
    return VectorType::get(vt.getShape(), elem);
  return elem;
}

/// A constant of type `type` (scalar or vector) whose elements are `attr`.
static Value splat(OpBuilder &b, Location loc, Type type, TypedAttr attr) {
  if (auto vt = dyn_cast<VectorType>(type))
    return arith::ConstantOp::create(b, loc, vt,
                                     DenseElementsAttr::get(vt, attr));
  return arith::ConstantOp::create(b, loc, type, attr);
}

static Value intConstant(OpBuilder &b, Location loc, Type type,
                         const APInt &value) {
  Type elem = getElementTypeOrSelf(type);
  return splat(b, loc, type, b.getIntegerAttr(elem, value));
}

/// 2^k in the float type of `type` (inf when it does not fit).
static Value powerOfTwo(OpBuilder &b, Location loc, Type type, int k,
                        bool negative = false) {
  auto ft = cast<FloatType>(getElementTypeOrSelf(type));
  llvm::APFloat one(ft.getFloatSemantics(), 1);
  llvm::APFloat value =
      llvm::scalbn(one, k, llvm::APFloat::rmNearestTiesToEven);
  if (negative)
    value.changeSign();
  return splat(b, loc, type, b.getFloatAttr(ft, value));
}

static bool isUnsignedInt(Type t) {
  auto it = dyn_cast<IntegerType>(t);
  return it && it.isUnsigned();
}

//===----------------------------------------------------------------------===//
// fp8 in integer arithmetic
//===----------------------------------------------------------------------===//
//
// No target lowers arith.extf / truncf on fp8 types (LLVM has no fp8 type:
// they are i8 after type conversion), so fp8 values convert through f32 (or
// f64) with integer operations on the bits. float -> fp8 rounds to nearest
// even and saturates to the largest finite value (PTX's cvt.rn.satfinite,
// what CUDA's __nv_fp8_e4m3(float) does); NaN stays NaN.

namespace {
/// The fields of an fp8 format.
struct Fp8Format {
  unsigned expBits, manBits;
  int bias;
  bool ieeeSpecials; // e5m2: inf and NaN at the top exponent; e4m3fn: only
                     // S.1111.111 is NaN, no inf
  double maxFinite;
};
} // namespace

static std::optional<Fp8Format> fp8FormatOf(Type t) {
  if (isa<Float8E4M3FNType>(t))
    return Fp8Format{4, 3, 7, false, 448.0};
  if (isa<Float8E5M2Type>(t))
    return Fp8Format{5, 2, 15, true, 57344.0};
  return std::nullopt;
}

/// Integer constant of `type` (scalar or vector of integers).
static Value intConst(OpBuilder &b, Location loc, Type type, int64_t v) {
  auto it = cast<IntegerType>(getElementTypeOrSelf(type));
  return intConstant(b, loc, type,
                     APInt(it.getWidth(), v, /*isSigned=*/true,
                           /*implicitTrunc=*/true));
}

/// fp8 bits (i8, or a vector of i8) -> f32.
static Value fp8ToF32(OpBuilder &b, Location loc, Value bits8,
                      const Fp8Format &f) {
  Type i32 = shaped(bits8.getType(), b.getI32Type());
  Type f32 = shaped(bits8.getType(), b.getF32Type());
  auto c = [&](int64_t v) { return intConst(b, loc, i32, v); };
  Value x = arith::ExtUIOp::create(b, loc, i32, bits8);
  Value sign = arith::ShLIOp::create(
      b, loc, arith::AndIOp::create(b, loc, x, c(0x80)), c(24));
  Value exp = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, x, c(f.manBits)),
      c((1 << f.expBits) - 1));
  Value man = arith::AndIOp::create(b, loc, x, c((1 << f.manBits) - 1));
  // Normal numbers: rebias the exponent, widen the mantissa.
  Value normal = arith::OrIOp::create(
      b, loc,
      arith::ShLIOp::create(b, loc,
                            arith::AddIOp::create(b, loc, exp, c(127 - f.bias)),
                            c(23)),
      arith::ShLIOp::create(b, loc, man, c(23 - f.manBits)));
  // Subnormals (exponent 0, zero included): man * 2^(1 - bias - manBits),
  // exact in f32.
  Value sub = arith::MulFOp::create(
      b, loc, arith::UIToFPOp::create(b, loc, f32, man),
      powerOfTwo(b, loc, f32, 1 - f.bias - static_cast<int>(f.manBits)));
  Value subBits = arith::BitcastOp::create(b, loc, i32, sub);
  Value isSub = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, exp,
                                      c(0));
  Value mag = arith::SelectOp::create(b, loc, isSub, subBits, normal);
  // Specials.
  int64_t topExp = (1 << f.expBits) - 1;
  Value special;
  Value specialBits;
  if (f.ieeeSpecials) {
    special = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, exp,
                                    c(topExp));
    specialBits = arith::OrIOp::create(
        b, loc, c(0x7F800000),
        arith::ShLIOp::create(b, loc, man, c(23 - f.manBits)));
  } else {
    special = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::AndIOp::create(b, loc, x, c(0x7F)), c(0x7F));
    specialBits = c(0x7FC00000);
  }
  mag = arith::SelectOp::create(b, loc, special, specialBits, mag);
  return arith::BitcastOp::create(b, loc, f32,
                                  arith::OrIOp::create(b, loc, mag, sign));
}

/// f32 or f64 `v` -> fp8 bits (i8): round to nearest even, saturate to the
/// largest finite value, NaN -> NaN.
static Value floatToFp8(OpBuilder &b, Location loc, Value v,
                        const Fp8Format &f) {
  auto ft = cast<FloatType>(getElementTypeOrSelf(v.getType()));
  bool wide = ft.getWidth() == 64;
  unsigned width = wide ? 64 : 32, srcMan = wide ? 52 : 23;
  int srcBias = wide ? 1023 : 127;
  Type it = shaped(v.getType(), b.getIntegerType(width));
  Type i8 = shaped(v.getType(), b.getI8Type());
  auto c = [&](int64_t x) { return intConst(b, loc, it, x); };
  Value bits = arith::BitcastOp::create(b, loc, it, v);
  Value sign = arith::TruncIOp::create(
      b, loc, i8, arith::ShRUIOp::create(b, loc, bits, c(width - 8)));
  sign = arith::AndIOp::create(b, loc, sign, intConst(b, loc, i8, 0x80));
  Value absBits = arith::AndIOp::create(
      b, loc, bits,
      intConstant(b, loc, it, APInt::getSignedMaxValue(width)));
  Value a = arith::BitcastOp::create(b, loc, v.getType(), absBits);
  Value isNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, a, a);
  // Saturate first (inf included): rounding cannot then overflow.
  auto maxAttr = b.getFloatAttr(ft, f.maxFinite);
  a = arith::MinimumFOp::create(b, loc, a, splat(b, loc, a.getType(), maxAttr));
  Value aBits = arith::BitcastOp::create(b, loc, it, a);
  // Normal results: round the mantissa to manBits bits (ties to even); a
  // carry moves into the exponent, as it should. Then rebias.
  unsigned drop = srcMan - f.manBits;
  Value lsb = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, aBits, c(drop)), c(1));
  Value rounded = arith::AddIOp::create(
      b, loc, aBits,
      arith::AddIOp::create(b, loc, c((int64_t(1) << (drop - 1)) - 1), lsb));
  rounded = arith::ShRUIOp::create(b, loc, rounded, c(drop));
  Value normal = arith::SubIOp::create(
      b, loc, rounded, c(int64_t(srcBias - f.bias) << f.manBits));
  // Subnormal results (below the smallest normal 2^(1 - bias)): the count of
  // 2^(1 - bias - manBits) units, rounded to nearest even by adding 2^mant
  // of the source format (exact for these small values); a count of
  // 2^manBits is the smallest normal's encoding.
  int scale = f.bias - 1 + static_cast<int>(f.manBits);
  Value scaled = arith::MulFOp::create(
      b, loc, a, powerOfTwo(b, loc, a.getType(), scale));
  Value magic = powerOfTwo(b, loc, a.getType(), srcMan);
  Value sum = arith::AddFOp::create(b, loc, scaled, magic);
  Value sub = arith::SubIOp::create(
      b, loc, arith::BitcastOp::create(b, loc, it, sum),
      arith::BitcastOp::create(b, loc, it, magic));
  Value isSub = arith::CmpFOp::create(
      b, loc, arith::CmpFPredicate::OLT, a,
      powerOfTwo(b, loc, a.getType(), 1 - f.bias));
  Value mag = arith::SelectOp::create(b, loc, isSub, sub, normal);
  Value mag8 = arith::TruncIOp::create(b, loc, i8, mag);
  mag8 = arith::SelectOp::create(b, loc, isNaN, intConst(b, loc, i8, 0x7F),
                                 mag8);
  return arith::OrIOp::create(b, loc, mag8, sign);
}

//===----------------------------------------------------------------------===//
// float8_e8m0fnu (MX scale factors): an unsigned power of two
//===----------------------------------------------------------------------===//
//
// Code c in [0, 254] is 2^(c - 127); 255 is NaN; no zero, no sign. As CUDA's
// __nv_cvt_float_to_e8m0 with __NV_SATFINITE and cudaRoundPosInf (what
// TileLang's casts call): the magnitude rounds up to a power of two, zero and
// magnitudes up to 2^-127 give code 0, values past 2^127 and infinities
// saturate to 254, NaN gives 255. Back to float: exact (2^-127 is an f32
// subnormal).

/// e8m0 bits (i8, or a vector of i8) -> f32.
static Value e8m0ToF32(OpBuilder &b, Location loc, Value bits8) {
  Type i32 = shaped(bits8.getType(), b.getI32Type());
  Type f32 = shaped(bits8.getType(), b.getF32Type());
  auto c = [&](int64_t v) { return intConst(b, loc, i32, v); };
  Value x = arith::ExtUIOp::create(b, loc, i32, bits8);
  Value r = arith::ShLIOp::create(b, loc, x, c(23));
  r = arith::SelectOp::create(
      b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, c(0)),
      c(0x00400000), r);
  r = arith::SelectOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, c(0xFF)),
      c(0x7FC00000), r);
  return arith::BitcastOp::create(b, loc, f32, r);
}

/// f32 or f64 `v` -> e8m0 bits (i8).
static Value floatToE8m0(OpBuilder &b, Location loc, Value v) {
  auto ft = cast<FloatType>(getElementTypeOrSelf(v.getType()));
  bool wide = ft.getWidth() == 64;
  unsigned width = wide ? 64 : 32, manBits = wide ? 52 : 23;
  Type it = shaped(v.getType(), b.getIntegerType(width));
  Type i8 = shaped(v.getType(), b.getI8Type());
  auto c = [&](int64_t x) { return intConst(b, loc, it, x); };
  Value bits = arith::BitcastOp::create(b, loc, it, v);
  Value a = arith::AndIOp::create(
      b, loc, bits,
      intConstant(b, loc, it, APInt::getSignedMaxValue(width)));
  Value exp = arith::ShRUIOp::create(b, loc, a, c(manBits));
  Value man = arith::AndIOp::create(b, loc, a,
                                    c((int64_t(1) << manBits) - 1));
  // ceil(log2 |v|) + 127 for normal |v|: the exponent, one more when any
  // mantissa bit is set.
  Value up = arith::ExtUIOp::create(
      b, loc, it,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, man, c(0)));
  Value code = arith::AddIOp::create(
      b, loc, arith::SubIOp::create(b, loc, exp, c(wide ? 1023 - 127 : 0)),
      up);
  // Magnitudes up to 2^-127 (zero, f32 subnormals up to 2^-127, and for
  // f64 everything that small) give 0; those in (2^-127, 2^-126) give 1.
  Value lo = arith::BitcastOp::create(
      b, loc, it, powerOfTwo(b, loc, v.getType(), -127));
  Value hi = arith::BitcastOp::create(
      b, loc, it, powerOfTwo(b, loc, v.getType(), -126));
  code = arith::SelectOp::create(
      b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, a, hi),
      c(1), code);
  code = arith::SelectOp::create(
      b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, a, lo),
      c(0), code);
  // Saturate (infinities included), then NaN.
  code = arith::MinSIOp::create(b, loc, code, c(254));
  Value inf = arith::BitcastOp::create(
      b, loc, it,
      splat(b, loc, v.getType(),
            b.getFloatAttr(ft, llvm::APFloat::getInf(ft.getFloatSemantics()))));
  code = arith::SelectOp::create(
      b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, a, inf),
      c(255), code);
  return arith::TruncIOp::create(b, loc, i8, code);
}

Value tile::saturatingFloatToInt(OpBuilder &b, Location loc, Value v, Type to,
                                 bool isUnsigned) {
  Type type = v.getType();
  auto ft = cast<FloatType>(getElementTypeOrSelf(type));
  auto it = cast<IntegerType>(getElementTypeOrSelf(to));
  unsigned width = it.getWidth();
  // Narrow floats compare exactly in f32 (every f16/bf16/fp8 value is one).
  if (ft.getWidth() < 32) {
    type = shaped(type, b.getF32Type());
    v = arith::ExtFOp::create(b, loc, type, v);
  }
  Type resultType = shaped(type, it);
  Value r;
  Value above, below;
  APInt maxValue, minValue;
  if (isUnsigned) {
    auto op = arith::FPToUIOp::create(b, loc, resultType, v);
    op->setAttr(kSaturatedAttrName, b.getUnitAttr());
    r = op;
    above = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, v,
                                  powerOfTwo(b, loc, type, width));
    below = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE, v,
                                  powerOfTwo(b, loc, type, 0, true));
    maxValue = APInt::getMaxValue(width);
    minValue = APInt::getZero(width);
  } else {
    auto op = arith::FPToSIOp::create(b, loc, resultType, v);
    op->setAttr(kSaturatedAttrName, b.getUnitAttr());
    r = op;
    above = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, v,
                                  powerOfTwo(b, loc, type, width - 1));
    below = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, v,
                                  powerOfTwo(b, loc, type, width - 1, true));
    maxValue = APInt::getSignedMaxValue(width);
    minValue = APInt::getSignedMinValue(width);
  }
  r = arith::SelectOp::create(b, loc, above,
                              intConstant(b, loc, resultType, maxValue), r);
  r = arith::SelectOp::create(b, loc, below,
                              intConstant(b, loc, resultType, minValue), r);
  Value isNaN =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, v, v);
  return arith::SelectOp::create(
      b, loc, isNaN, intConstant(b, loc, resultType, APInt::getZero(width)),
      r);
}

Value tile::convertElements(OpBuilder &b, Location loc, Value v, Type from,
                            Type to, Type toStorage) {
  Type vType = v.getType();
  Type vElem = getElementTypeOrSelf(vType);
  if (!from)
    from = vElem;
  if (!toStorage)
    toStorage = storageTypeOf(to);
  auto result = [&](Type elem) { return shaped(vType, elem); };
  bool fromUnsigned = isUnsignedInt(from) || from.isInteger(1);
  bool toBool = to.isInteger(1);
  if (from == to && vElem == toStorage)
    return v;

  // fp8 goes through f32 (f64 to fp8 rounds once, from f64).
  if (isa<Float8E8M0FNUType>(from)) {
    Value bits8 = arith::BitcastOp::create(b, loc, result(b.getI8Type()), v);
    Value wide = e8m0ToF32(b, loc, bits8);
    return convertElements(b, loc, wide, b.getF32Type(), to, toStorage);
  }
  if (isa<Float8E8M0FNUType>(to)) {
    Type via = from.isF64() ? from : b.getF32Type();
    Value wide = convertElements(b, loc, v, from, via);
    Value bits8 = floatToE8m0(b, loc, wide);
    return arith::BitcastOp::create(b, loc, result(toStorage), bits8);
  }
  if (std::optional<Fp8Format> f = fp8FormatOf(from)) {
    Value bits8 = arith::BitcastOp::create(b, loc, result(b.getI8Type()), v);
    Value wide = fp8ToF32(b, loc, bits8, *f);
    return convertElements(b, loc, wide, b.getF32Type(), to, toStorage);
  }
  if (std::optional<Fp8Format> f = fp8FormatOf(to)) {
    Type via = from.isF64() ? from : b.getF32Type();
    Value wide = convertElements(b, loc, v, from, via);
    Value bits8 = floatToFp8(b, loc, wide, *f);
    return arith::BitcastOp::create(b, loc, result(toStorage), bits8);
  }

  // Index values go through i64.
  if (from.isIndex()) {
    Type i64 = b.getI64Type();
    v = arith::IndexCastOp::create(b, loc, result(i64), v);
    return convertElements(b, loc, v, i64, to, toStorage);
  }
  if (to.isIndex()) {
    if (isa<FloatType>(from)) {
      v = saturatingFloatToInt(b, loc, v, b.getI64Type(), false);
      from = b.getI64Type();
    }
    if (fromUnsigned)
      return arith::IndexCastUIOp::create(b, loc, result(toStorage), v);
    return arith::IndexCastOp::create(b, loc, result(toStorage), v);
  }

  auto fromFloat = dyn_cast<FloatType>(from);
  auto toFloat = dyn_cast<FloatType>(to);
  if (fromFloat && toFloat) {
    if (fromFloat.getWidth() < toFloat.getWidth())
      return arith::ExtFOp::create(b, loc, result(to), v);
    if (fromFloat.getWidth() > toFloat.getWidth())
      return arith::TruncFOp::create(b, loc, result(to), v);
    // Same width, another format (f16 <-> bf16, e4m3 <-> e5m2): through f32.
    Value wide = arith::ExtFOp::create(b, loc, result(b.getF32Type()), v);
    return arith::TruncFOp::create(b, loc, result(to), wide);
  }
  if (toFloat) {
    if (fromUnsigned)
      return arith::UIToFPOp::create(b, loc, result(to), v);
    return arith::SIToFPOp::create(b, loc, result(to), v);
  }

  // Booleans: x != 0.
  if (toBool) {
    Value zero = splat(b, loc, vType, b.getZeroAttr(vElem));
    Value ne = fromFloat
                   ? arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE,
                                           v, zero)
                         .getResult()
                   : arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                           v, zero)
                         .getResult();
    if (toStorage.isInteger(1))
      return ne;
    return arith::ExtUIOp::create(b, loc, result(toStorage), ne);
  }

  if (fromFloat)
    return saturatingFloatToInt(b, loc, v, result(toStorage),
                                isUnsignedInt(to));

  unsigned fw = vElem.getIntOrFloatBitWidth();
  unsigned tw = toStorage.getIntOrFloatBitWidth();
  if (fw < tw) {
    if (fromUnsigned)
      return arith::ExtUIOp::create(b, loc, result(toStorage), v);
    return arith::ExtSIOp::create(b, loc, result(toStorage), v);
  }
  if (fw > tw)
    return arith::TruncIOp::create(b, loc, result(toStorage), v);
  return v;
}

Value tile::convertElements(OpBuilder &b, Location loc, Value v, Type to) {
  return convertElements(b, loc, v, getElementTypeOrSelf(v.getType()),
                         getElementTypeOrSelf(to));
}
