// The namespace picker: lists GET /ns/ and switches the base path of every
// request (api.js) between the default namespace and /ns/<name>. Hidden when
// the server has no namespaces (501) or none but the default one.

import { request, currentNamespace, setNamespace } from './api.js';
import { el } from './dom.js';

const KEY = 'larder-namespace';

/** Fills `select` from GET /ns/ (keeping the choice of this tab) and calls
 *  `onSwitch()` after each change; resolves to a function that lists again. */
export async function namespacePicker(select, onSwitch) {
  setNamespace(sessionStorage.getItem(KEY) || '');
  const refresh = async () => {
    const res = await request('/ns/');
    if (!res.ok) { select.hidden = true; return; }
    const names = (await res.json()).namespaces.map((n) => n.name);
    const current = currentNamespace();
    if (current && !names.includes(current)) names.push(current);
    select.replaceChildren(el('option', { value: '' }, 'default namespace'),
      ...names.sort().map((name) => el('option', { value: name }, name)));
    select.value = current;
    select.hidden = names.length === 0;
  };
  select.addEventListener('change', () => {
    setNamespace(select.value);
    if (select.value) sessionStorage.setItem(KEY, select.value); else sessionStorage.removeItem(KEY);
    onSwitch();
  });
  await refresh().catch(() => { select.hidden = true; });
  return () => refresh().catch(() => {});
}
