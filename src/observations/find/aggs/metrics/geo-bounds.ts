import type { GeoPoint } from "../../fields.js";
import { withRows, type Builder, type Output } from "../types.js";
import { geoRows, geoValues } from "./geo-points.js";

export const geoBounds: Builder = (body, b) => {
  const { field, get } = geoValues(body, b.where, ["wrap_longitude"]);
  const wrap = body.wrap_longitude !== false;
  const bounds = (each: (visit: (p: GeoPoint) => void) => void): Output => {
    let top = -Infinity;
    let bottom = Infinity;
    let posLeft = Infinity;
    let posRight = -Infinity;
    let negLeft = Infinity;
    let negRight = -Infinity;
    each((p) => {
      top = Math.max(top, p.lat);
      bottom = Math.min(bottom, p.lat);
      if (p.lon >= 0) {
        posLeft = Math.min(posLeft, p.lon);
        posRight = Math.max(posRight, p.lon);
      } else {
        negLeft = Math.min(negLeft, p.lon);
        negRight = Math.max(negRight, p.lon);
      }
    });
    if (top === -Infinity) return {};
    let left: number;
    let right: number;
    // The choice ES 5.6's InternalGeoBounds makes: the narrower of the plain and the date-line-crossing box.
    if (negLeft === Infinity) [left, right] = [posLeft, posRight];
    else if (posLeft === Infinity) [left, right] = [negLeft, negRight];
    else if (wrap && posRight - negLeft > 180 - posLeft - (-180 - negRight)) [left, right] = [posLeft, negRight];
    else [left, right] = [negLeft, posRight];
    return { bounds: { top_left: { lat: top, lon: left }, bottom_right: { lat: bottom, lon: right } } };
  };
  return withRows(
    (docs) =>
      bounds((visit) => {
        for (const d of docs) for (const p of get(d)) visit(p);
      }),
    (set) => bounds((visit) => geoRows(field, set, visit)),
  );
};
