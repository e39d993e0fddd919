import type { Builder } from "../types.js";
import { geoValues } from "./geo-points.js";

export const geoCentroid: Builder = (body, b) => {
  const { get } = geoValues(body, b.where, []);
  return (docs) => {
    let lat = 0;
    let lon = 0;
    let n = 0;
    for (const d of docs) {
      for (const p of get(d)) {
        lat += p.lat;
        lon += p.lon;
        n++;
      }
    }
    return n === 0 ? {} : { location: { lat: lat / n, lon: lon / n } };
  };
};
