import { Page } from '../ui';

export const ConnectionsPage = () => <Page title="Connections">{null}</Page>;
