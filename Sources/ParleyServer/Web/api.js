// REST client for /api/v1 with the stored token, server errors as ApiError.
const BASE = '/api/v1';
const TOKEN_KEY = 'parley.token';
const USER_KEY = 'parley.user';
const REFRESH_KEY = 'parley.refresh';
const EXPIRES_KEY = 'parley.expires';

export class ApiError extends Error {
  constructor(code, message, status = 0, retryAfter = null) {
    super(message || code);
    this.code = code;
    this.status = status;
    this.retryAfter = retryAfter;
  }
  // Worth trying again later with the same clientMessageId (nothing was stored).
  get retryable() {
    return ['network', 'disconnected', 'timeout', 'unavailable', 'rate_limited', 'internal'].includes(this.code);
  }
}

let unauthorizedHandler = () => {};
export function onUnauthorized(fn) { unauthorizedHandler = fn; }

export function getToken() { return localStorage.getItem(TOKEN_KEY); }
export function getSavedUser() {
  try { return JSON.parse(localStorage.getItem(USER_KEY) || 'null'); } catch { return null; }
}
// A login, registration or renewal answer (`{token, user, refreshToken?, expiresAt?}`), or
// just the user (`saveSession(null, user)`).
export function saveSession(token, user, refreshToken, expiresAt) {
  if (token) {
    localStorage.setItem(TOKEN_KEY, token);
    if (expiresAt) localStorage.setItem(EXPIRES_KEY, expiresAt); else localStorage.removeItem(EXPIRES_KEY);
  }
  if (refreshToken) localStorage.setItem(REFRESH_KEY, refreshToken);
  if (user) localStorage.setItem(USER_KEY, JSON.stringify(user));
}
export function clearSession() {
  for (const key of [TOKEN_KEY, USER_KEY, REFRESH_KEY, EXPIRES_KEY]) localStorage.removeItem(key);
}

// Access tokens live minutes; the refresh token renews them, once each: a renewal answers a new
// refresh token and the old one stops working (presented again later, it ends the sign-in).
// So one renewal at a time across every tab (Web Locks where the browser has them), and a tab
// that waited reads what another tab saved before renewing itself.
function claims(token) {
  try { return JSON.parse(atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'))); } catch { return {}; }
}
function expiryOf(token) {
  const saved = Date.parse(localStorage.getItem(EXPIRES_KEY) || '');
  if (!Number.isNaN(saved)) return saved;
  const exp = claims(token).exp;
  return exp ? exp * 1000 : null;
}
// Renew when less than a third of the token's life is left (5 minutes of 15).
export function renewalDue(now = Date.now()) {
  const token = getToken();
  if (!token || !localStorage.getItem(REFRESH_KEY)) return false;
  const expiry = expiryOf(token);
  const issued = (claims(token).iat || 0) * 1000;
  if (!expiry) return false;
  const window = issued ? Math.min((expiry - issued) / 3, 7 * 86400000) : 60000;
  return expiry - now < window;
}

const renewedListeners = [];
export function onTokenRenewed(fn) { renewedListeners.push(fn); }
window.addEventListener('storage', (e) => {
  // Another tab renewed: this tab's socket carries on with the new token.
  if (e.key === TOKEN_KEY && e.newValue) for (const fn of renewedListeners) fn(e.newValue);
});

let renewing = null;
async function renewUnderLock(stale) {
  // Someone (another tab) renewed while this one waited: theirs is current.
  if (stale && getToken() !== stale) return getToken();
  const refreshToken = localStorage.getItem(REFRESH_KEY);
  if (!refreshToken) throw new ApiError('unauthorized', 'No refresh token', 401);
  let res;
  try {
    res = await fetch(BASE + '/auth/refresh', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ refreshToken }),
    });
  } catch {
    throw new ApiError('network', 'Cannot reach the server', 0);
  }
  if (!res.ok) throw await errorFrom(res);
  const body = await res.json();
  saveSession(body.token, body.user, body.refreshToken, body.expiresAt);
  for (const fn of renewedListeners) fn(body.token);
  return body.token;
}

// Renews the sign-in (once, whoever asks meanwhile) and answers the new access token; with
// `stale`, only while that is still the current token.
export function renewSession(stale = getToken()) {
  if (!renewing) {
    const run = () => renewUnderLock(stale);
    renewing = (navigator.locks ? navigator.locks.request('parley-refresh', run) : run())
      .finally(() => { renewing = null; });
  }
  return renewing;
}

// The access token, renewed first when it is about to expire.
export async function validToken() {
  const token = getToken();
  if (!token || !localStorage.getItem(REFRESH_KEY)) return token;
  const expiry = expiryOf(token);
  if (expiry && expiry - Date.now() < 30000) {
    try { return await renewSession(token); } catch (e) { if (e.status === 401) unauthorizedHandler(e); throw e; }
  }
  return token;
}

async function errorFrom(res) {
  let body = null;
  try { body = await res.json(); } catch { /* not JSON */ }
  const err = body && body.error;
  const retryAfter = (err && err.retryAfter) || Number(res.headers.get('Retry-After')) || null;
  return new ApiError(err?.code || `http_${res.status}`, err?.message || `Request failed (${res.status})`, res.status, retryAfter);
}

export async function api(method, path, body) {
  const isAuth = path.startsWith('/auth/login') || path.startsWith('/auth/register') || path.startsWith('/auth/refresh') || path.startsWith('/auth/verify');
  let token = isAuth ? null : await validToken();
  const send = async () => {
    const headers = {};
    if (token) headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    try {
      return await fetch(BASE + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch {
      throw new ApiError('network', 'Cannot reach the server', 0);
    }
  };
  let res = await send();
  // Refused: the token may have expired meanwhile (a laptop asleep): renew once and retry.
  if (res.status === 401 && token && !isAuth && localStorage.getItem(REFRESH_KEY)) {
    try {
      token = await renewSession(token);
      res = await send();
    } catch (e) {
      if (e.status === 401) { unauthorizedHandler(e); }
      throw e;
    }
  }
  if (!res.ok) {
    const err = await errorFrom(res);
    if (res.status === 401 && token && !isAuth) unauthorizedHandler(err);
    throw err;
  }
  if (res.status === 204) return null;
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

export const qs = (params) => {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, String(v));
  const s = u.toString();
  return s ? `?${s}` : '';
};

const ALLOWED_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/heic', 'video/mp4',
  'video/quicktime', 'audio/mpeg', 'audio/mp4', 'audio/aac', 'audio/ogg', 'audio/wav', 'application/pdf',
  'application/zip', 'text/plain', 'application/octet-stream']);

// Raw-body upload with progress (fetch has no upload progress; XMLHttpRequest does).
export async function uploadAttachment(file, onProgress) {
  const token = await validToken();
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    const type = ALLOWED_TYPES.has(file.type) ? file.type : 'application/octet-stream';
    xhr.open('POST', `${BASE}/attachments${qs({ name: file.name || 'file' })}`);
    xhr.setRequestHeader('Authorization', `Bearer ${token}`);
    xhr.setRequestHeader('Content-Type', type);
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) onProgress(e.loaded / e.total); };
    xhr.onerror = () => reject(new ApiError('network', 'Upload failed: cannot reach the server'));
    xhr.onload = () => {
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch { /* ignore */ }
      if (xhr.status >= 200 && xhr.status < 300) resolve(body);
      else reject(new ApiError(body?.error?.code || `http_${xhr.status}`, body?.error?.message || `Upload failed (${xhr.status})`, xhr.status));
    };
    xhr.send(file);
  });
}

// Attachments need the Authorization header, so they are fetched as blobs and shown
// through object URLs (img-src allows blob:). Cached per URL for the page's life.
const blobCache = new Map();
export function attachmentBlobUrl(url) {
  if (!blobCache.has(url)) {
    const p = validToken().then((token) => fetch(url, { headers: { Authorization: `Bearer ${token}` } })).then(async (res) => {
      if (!res.ok) throw await errorFrom(res);
      return URL.createObjectURL(await res.blob());
    });
    p.catch(() => blobCache.delete(url));
    blobCache.set(url, p);
  }
  return blobCache.get(url);
}

// A file the server makes for the signed-in user (the data export): fetched with the token,
// as a Blob, for the page to save through an object URL.
export async function fetchBlob(path) {
  const token = await validToken();
  let res;
  try {
    res = await fetch(BASE + path, { headers: { Authorization: `Bearer ${token}` } });
  } catch {
    throw new ApiError('network', 'Cannot reach the server', 0);
  }
  if (!res.ok) throw await errorFrom(res);
  return res.blob();
}
