// Types of entry.js for the tests, which are TypeScript.
export declare const chooseEntry: (input: {
  distMtime: number | null;
  newestSourceMtime: number;
  fromSource?: boolean;
}) => 'dist' | 'source';
export declare const newestMtime: (dir: string) => number;
export declare const mtimeOf: (file: string) => number | null;
