// The order argmax and top-k sort by: larger value first, NaN above everything, lower
// index first on ties. NO_INDEX ranks below every real element.
#ifndef VKF_RANK_GLSL
#define VKF_RANK_GLSL
const uint NO_INDEX = 0xffffffffu;

bool ranks_before(float v1, uint i1, float v2, uint i2) {
  if (i1 == NO_INDEX) return false;
  if (i2 == NO_INDEX) return true;
  bool n1 = isnan(v1), n2 = isnan(v2);
  if (n1 != n2) return n1;
  if (!n1 && v1 != v2) return v1 > v2;
  return i1 < i2;
}
#endif
