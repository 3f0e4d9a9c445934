import { Page } from '../ui';

export const UsagePage = () => <Page title="Usage">{null}</Page>;
