import type { Provision } from "../../src/provision/index.js";

export const API_KEY = "test-api-key-0001";

/** A small tree and cast most tests can use: root > acme > (east, west), root > other. */
export const BASE_PROVISION: Provision = {
  apiKeys: [API_KEY],
  domains: [
    { id: "root" },
    { id: "acme", parent: "root", label: "Acme" },
    { id: "east", parent: "acme", label: "Acme East" },
    { id: "west", parent: "acme", label: "Acme West" },
    { id: "other", parent: "root", label: "Other" },
  ],
  users: [
    { userName: "admin", password: "admin-pw", role: "ReadWrite", homeDomain: "root", privileges: { root: ["*.*"] } },
    {
      userName: "alice",
      password: "alice-pw",
      role: "ReadWrite",
      homeDomain: "acme",
      privileges: {
        acme: [
          "Domains.*",
          "Users.*",
          "ThingTypes.*",
          "Things.*",
          "ThingGroups.*",
          "Rules.*",
          "ThingJobs.*",
          "Observations.READ",
          "DataExport.*",
          "Files.*",
          "Events.*",
        ],
      },
    },
    {
      userName: "reader",
      password: "reader-pw",
      role: "Read",
      homeDomain: "acme",
      privileges: { acme: ["*.*"] },
    },
    {
      userName: "eastie",
      password: "eastie-pw",
      role: "ReadWrite",
      homeDomain: "east",
      privileges: { east: ["*.*"] },
    },
  ],
  thingTypes: [
    {
      id: "10",
      label: "Tracker",
      domain: "acme",
      resources: [
        { name: "temp", dataType: "long", resourceType: "thing" },
        { name: "latlng", dataType: "geo_point", resourceType: "thing" },
      ],
    },
    {
      id: "20",
      label: "Meter",
      domain: "east",
      resources: [{ name: "power", dataType: "long", resourceType: "thing" }],
    },
  ],
  things: [
    { thingName: "t1", thingType: "10", domain: "acme", serial: "SN1", secret: "dev-pw-0123456789abcdef" },
    { thingName: "t2", thingType: "10", domain: "acme", serial: "SN2", secret: "dev-pw-0123456789abcdef" },
    { thingName: "e1", thingType: "20", domain: "east", serial: "SN-E1", secret: "dev-pw-0123456789abcdef" },
  ],
  thingGroups: [{ id: "g1", name: "fleet", domain: "acme", things: ["t1"] }],
};
