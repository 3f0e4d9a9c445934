import { Page } from '../ui';

export const KeysPage = () => <Page title="Keys">{null}</Page>;
