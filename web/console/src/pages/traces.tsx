import { Page } from '../ui';

export const TracesPage = () => <Page title="Traces">{null}</Page>;
