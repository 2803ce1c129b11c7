// Minimal stand-in for the Odds API TypeScript SDK (`@odds-api/client`, same method names): it
// calls fetchImpl once per request and throws an error that carries status and body but never
// headers.
// Shipped in the package for the demo; js-tests/support/sdk-client.mjs re-exports it.
export class OddsApiError extends Error {
  constructor(status, body) {
    super(`Odds API request failed with status ${status}`);
    this.name = 'OddsApiError';
    this.status = status;
    this.body = body;
  }
}

export class OddsApiClient {
  #apiKey; #baseUrl; #bearerToken; #fetchImpl;

  constructor({ apiKey, baseUrl = 'https://api.odds-api.net/v1', bearerToken, fetchImpl = globalThis.fetch } = {}) {
    this.#apiKey = apiKey;
    this.#baseUrl = baseUrl;
    this.#bearerToken = bearerToken;
    this.#fetchImpl = fetchImpl;
  }

  async #request(method, path, body) {
    const headers = { Accept: 'application/json' };
    if (this.#apiKey) headers['X-API-Key'] = this.#apiKey;
    if (this.#bearerToken) headers.Authorization = `Bearer ${this.#bearerToken}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const response = await this.#fetchImpl(`${this.#baseUrl}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    let parsed = text;
    try { parsed = JSON.parse(text); } catch { /* not JSON: keep the text */ }
    if (!response.ok) throw new OddsApiError(response.status, parsed);
    return parsed;
  }

  getOddsSnapshot(eventId) {
    return this.#request('GET', `/events/${encodeURIComponent(eventId)}/odds/snapshot`);
  }

  getUsage() {
    return this.#request('GET', '/usage');
  }

  post(path, body) {
    return this.#request('POST', path, body);
  }
}
