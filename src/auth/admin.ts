import { notFound } from "../errors/index.js";
import type { Identity } from "./identity.js";
import { ROOT_DOMAIN, type ApiKeyInfo, type Domain } from "./store.js";
import { authorize, requireReadWrite, type Principal } from "./privileges.js";

/**
 * The domain operations with their access rules: a domain is seen with `Domains.READ` on it (or
 * above); a new one needs `Domains.CREATE` on its parent. Changes need a ReadWrite role.
 */
export class DomainsService {
  constructor(private readonly identity: Identity) {}

  list(p: Principal): Domain[] {
    return this.identity.domains().filter((d) => p.can("Domains.READ", d.id));
  }

  get(p: Principal, id: string): Domain {
    const domain = this.existing(id);
    authorize(p, "Domains.READ", domain.id);
    return domain;
  }

  create(p: Principal, body: { id: string; parent: string; label?: string | undefined }): Promise<Domain> {
    requireReadWrite(p);
    this.existing(body.parent);
    authorize(p, "Domains.CREATE", body.parent);
    return this.identity.createDomain(body.id, body.parent, body.label);
  }

  update(p: Principal, id: string, label: string): Promise<Domain> {
    const domain = this.existing(id);
    requireReadWrite(p);
    authorize(p, "Domains.UPDATE", domain.id);
    return this.identity.updateDomain(domain.id, label);
  }

  async delete(p: Principal, id: string): Promise<void> {
    const domain = this.existing(id);
    requireReadWrite(p);
    authorize(p, "Domains.DELETE", domain.id);
    await this.identity.deleteDomain(domain.id);
  }

  private existing(id: string): Domain {
    const domain = this.identity.domain(id);
    if (!domain) throw notFound("DOMAIN_NOT_FOUND", `Domain ${id}`, "id");
    return domain;
  }
}

/** API keys identify client applications of the whole service, so they are managed on root only. */
export class ApiKeysService {
  constructor(private readonly identity: Identity) {}

  list(p: Principal): Promise<ApiKeyInfo[]> {
    authorize(p, "ApiKeys.READ", ROOT_DOMAIN);
    return this.identity.apiKeys();
  }

  /** Adds `key` (the caller generates it, and shows it only once). */
  add(p: Principal, key: string, label: string): Promise<ApiKeyInfo> {
    requireReadWrite(p);
    authorize(p, "ApiKeys.CREATE", ROOT_DOMAIN);
    return this.identity.addApiKey(key, label);
  }

  delete(p: Principal, id: string): Promise<void> {
    requireReadWrite(p);
    authorize(p, "ApiKeys.DELETE", ROOT_DOMAIN);
    return this.identity.deleteApiKey(id);
  }
}
