/** The console's only way to the service: dms's public REST interface, with the signed-in user's credentials. */

export interface Session {
  apiKey: string;
  userName: string;
  roleName: string;
  domainName: string;
  token: string;
  refreshToken: string;
  /** Epoch ms after which the token is refreshed before use. */
  refreshAt: number;
  /** Per resource (Rules, Things, ...), the actions the user holds on some domain. */
  permissions: Record<string, string[]>;
}

interface LoginAnswer {
  user: { userName: string; roleName: string; domainName: string };
  credentials: { token: string; refreshToken: string; expiresIn: number };
  permissions: { objects: Record<string, string[]> };
}

/** An error answer of the interface: its key and, where it names one, the offending property. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly key: string,
    readonly property: string | undefined,
  ) {
    super(message);
  }
}

const STORAGE_KEY = "dms.console.session";

function sessionOf(apiKey: string, answer: LoginAnswer): Session {
  const { user, credentials, permissions } = answer;
  return {
    apiKey,
    userName: user.userName,
    roleName: user.roleName,
    domainName: user.domainName,
    token: credentials.token,
    refreshToken: credentials.refreshToken,
    // Refreshed at four fifths of its life, so a request never carries a token about to expire.
    refreshAt: Date.now() + credentials.expiresIn * 800,
    permissions: permissions.objects,
  };
}

async function errorOf(res: Response): Promise<ApiError> {
  const text = await res.text();
  try {
    const body = JSON.parse(text) as { message?: string; messageKey?: string; property?: string };
    return new ApiError(body.message ?? res.statusText, res.status, body.messageKey ?? "ERROR", body.property);
  } catch {
    return new ApiError(text || res.statusText, res.status, "ERROR", undefined);
  }
}

async function post<T>(path: string, apiKey: string, body: unknown): Promise<T> {
  const res = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": apiKey },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw await errorOf(res);
  return (await res.json()) as T;
}

/** The public client key the service announces, if one was provisioned. */
export async function publicApiKey(): Promise<string | undefined> {
  const res = await fetch("/metadata/manifest");
  if (!res.ok) return undefined;
  const body = (await res.json()) as { ApiKey?: string };
  return body.ApiKey || undefined;
}

export class Client {
  private refreshing: Promise<void> | undefined;

  constructor(
    public session: Session,
    private readonly onSignOut: () => void,
  ) {}

  static restore(onSignOut: () => void): Client | undefined {
    const saved = sessionStorage.getItem(STORAGE_KEY);
    if (!saved) return undefined;
    return new Client(JSON.parse(saved) as Session, onSignOut);
  }

  static async signIn(apiKey: string, userName: string, password: string, onSignOut: () => void): Promise<Client> {
    const answer = await post<LoginAnswer>("/auth/login", apiKey, { userName, password });
    const client = new Client(sessionOf(apiKey, answer), onSignOut);
    client.save();
    return client;
  }

  signOut(): void {
    sessionStorage.removeItem(STORAGE_KEY);
    this.onSignOut();
  }

  /** Whether the user holds `action` on `resource` in some domain (the server still checks each request). */
  can(resource: string, action: string): boolean {
    return this.session.permissions[resource]?.includes(action) ?? false;
  }

  private save(): void {
    sessionStorage.setItem(STORAGE_KEY, JSON.stringify(this.session));
  }

  private async fresh(): Promise<void> {
    if (Date.now() < this.session.refreshAt) return;
    this.refreshing ??= post<LoginAnswer>("/auth/refresh", this.session.apiKey, {
      refreshToken: this.session.refreshToken,
    })
      .then((answer) => {
        this.session = sessionOf(this.session.apiKey, answer);
        this.save();
      })
      .catch(() => this.signOut())
      .finally(() => (this.refreshing = undefined));
    await this.refreshing;
  }

  async raw(method: string, path: string, body?: unknown): Promise<Response> {
    await this.fresh();
    const headers: Record<string, string> = { "x-api-key": this.session.apiKey, authorization: this.session.token };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (res.status === 401) this.signOut();
    return res;
  }

  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.raw(method, path, body);
    if (!res.ok) throw await errorOf(res);
    const text = await res.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  get<T>(path: string): Promise<T> {
    return this.call<T>("GET", path);
  }
}
