// One of four files node --test runs in parallel processes (see same-keys.mjs).
import { sameKeysTests } from './same-keys.mjs';

sameKeysTests('file-3');
